import { z } from "@hono/zod-openapi";

// Host patterns of a network policy (docs/api.md "Network policy and secrets"): a host name,
// `*.` + a domain (any depth of subdomain, never the domain itself), either with `:port`.
// Without a port a pattern means 80 and 443. Policy names hosts, so IP literals and CIDRs
// are refused: the address checks of the egress proxy then never meet an allow-listed IP.

export const DEFAULT_PATTERN_PORTS: readonly number[] = Object.freeze([80, 443]);
export const MAX_PATTERN_CHARS = 260;

const LABEL = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;

export type HostPattern = {
  /** The domain, lower case, without `*.`. */
  readonly domain: string;
  /** True for `*.domain`: proper subdomains only. */
  readonly wildcard: boolean;
  readonly ports: readonly number[];
};

/** A DNS name of letters, digits and hyphens; never an IP literal (its last label has a letter). */
export function isHostName(host: string): boolean {
  if (host.length === 0 || host.length > 253) return false;
  const labels = host.split(".");
  if (!labels.every((label) => LABEL.test(label))) return false;
  return /[a-z]/.test(labels[labels.length - 1] ?? "");
}

/** The pattern, or undefined when the text is not one (IP literal, CIDR, bad name, bad port). */
export function parseHostPattern(text: string): HostPattern | undefined {
  const match = /^(\*\.)?([^:]+)(?::(\d{1,5}))?$/.exec(text);
  if (match === null) return undefined;
  const domain = match[2] ?? "";
  if (!isHostName(domain)) return undefined;
  const port = match[3] === undefined ? undefined : Number(match[3]);
  if (port !== undefined && (port < 1 || port > 65_535 || match[3]?.startsWith("0"))) {
    return undefined;
  }
  return {
    domain,
    wildcard: match[1] !== undefined,
    ports: port === undefined ? DEFAULT_PATTERN_PORTS : [port],
  };
}

export const hostPatternSchema = z
  .string()
  .max(MAX_PATTERN_CHARS)
  .transform((text) => text.trim().toLowerCase())
  .refine((text) => parseHostPattern(text) !== undefined, {
    message:
      "must be a host name, `*.` + a domain, or either with `:port` (IP literals and CIDRs are refused)",
  })
  .openapi({ type: "string", example: "pypi.org" })
  .describe("`pypi.org`, `*.github.com`, `example.com:8443`; without a port: 80 and 443.");

/** Lower case and without one trailing dot, as a client may write it. */
export function normalizeHost(host: string): string {
  const lower = host.toLowerCase();
  return lower.endsWith(".") ? lower.slice(0, -1) : lower;
}

function nameMatches(pattern: HostPattern, host: string): boolean {
  return pattern.wildcard ? host.endsWith(`.${pattern.domain}`) : host === pattern.domain;
}

/** Does `pattern` allow a connection to `host:port`? */
export function patternAllows(pattern: HostPattern, host: string, port: number): boolean {
  return pattern.ports.includes(port) && nameMatches(pattern, normalizeHost(host));
}

/**
 * Does `outer` allow everything `inner` does? (A run's pattern must be covered by one of
 * its user's ceiling patterns: a run narrows its policy, never widens it.)
 */
export function patternCovers(outer: HostPattern, inner: HostPattern): boolean {
  if (!inner.ports.every((port) => outer.ports.includes(port))) return false;
  if (!outer.wildcard) return !inner.wildcard && inner.domain === outer.domain;
  return inner.domain.endsWith(`.${outer.domain}`);
}
