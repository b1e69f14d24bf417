import { randomBytes } from "node:crypto";
import { parseHostPattern, patternAllows } from "../../shared/network/host-pattern.ts";
import type { LiveSecret } from "../../shared/secrets/secret-store.ts";

/** The user's secrets as they are now (read per request: a change applies to the next one). */
export type SecretSource = (uid: string, signal: AbortSignal) => Promise<LiveSecret[]>;

export type Headers = Record<string, string | string[] | undefined>;

/** A request about to leave, as the proxy will send it. */
export type OutgoingRequest = {
  readonly host: string;
  readonly port: number;
  /** The path and query (or the absolute URL of a plain-HTTP proxy request). */
  readonly url: string;
  readonly headers: Headers;
};

export type Rewritten =
  | {
      readonly ok: true;
      readonly headers: Headers;
      readonly swapped: readonly string[];
      /** Placeholders its body may not carry (every secret not bound to its host). */
      readonly forbidden: readonly Buffer[];
    }
  | {
      readonly ok: false;
      readonly reason: "secret_exfiltration";
      readonly names: readonly string[];
    };

/** One sandbox generation's secrets (decision 0132): its placeholders and the swap. */
export type SandboxSecrets = {
  /** name → placeholder (`wcs_` + 40 hex), made for this listener only. */
  readonly placeholders: ReadonlyMap<string, string>;
  /** Does a current secret bind `host:port`? (Then HTTPS to it is terminated, 0133.) */
  binds(host: string, port: number, signal: AbortSignal): Promise<boolean>;
  /** The request with the values of the secrets bound to its host, or the refusal. */
  rewrite(request: OutgoingRequest, signal: AbortSignal): Promise<Rewritten>;
};

export const PLACEHOLDER_PREFIX = "wcs_";

function bindsHost(secret: LiveSecret, host: string, port: number): boolean {
  return secret.hosts.some((text) => {
    const pattern = parseHostPattern(text);
    return pattern !== undefined && patternAllows(pattern, host, port);
  });
}

const valuesOf = (value: string | string[] | undefined): string[] =>
  value === undefined ? [] : Array.isArray(value) ? value : [value];

/** `Basic base64(user:password)` with every placeholder in it swapped; undefined when none. */
function swapBasic(header: string, swaps: readonly (readonly [string, string])[]) {
  const match = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(header);
  if (match === null) return undefined;
  const decoded = Buffer.from(match[1] ?? "", "base64").toString("utf8");
  let out = decoded;
  for (const [placeholder, value] of swaps) out = out.split(placeholder).join(value);
  return out === decoded ? undefined : `Basic ${Buffer.from(out, "utf8").toString("base64")}`;
}

/**
 * Where a placeholder may become its value: only in its secret's header (by the template:
 * the header holding just the placeholder becomes the template; a header holding it inside
 * other text gets the value in its place) and in HTTP basic auth (git), and only towards a
 * host the secret binds. Any placeholder of this sandbox seen in a request to a host its
 * secret does not bind (any header, the URL, also decoded basic auth) refuses the whole
 * request. A placeholder left in the URL or another header of a bound host stays a
 * placeholder: the value is never put anywhere the template does not say.
 */
export function createSandboxSecrets(
  uid: string,
  names: readonly string[],
  source: SecretSource,
): SandboxSecrets {
  const placeholders = new Map(
    names.map((name) => [name, `${PLACEHOLDER_PREFIX}${randomBytes(20).toString("hex")}`]),
  );
  const current = async (signal: AbortSignal) => {
    const live = await source(uid, signal);
    return new Map(live.map((secret) => [secret.name, secret]));
  };
  return {
    placeholders,
    async binds(host, port, signal) {
      const live = await current(signal);
      return [...placeholders.keys()].some((name) => {
        const secret = live.get(name);
        return secret !== undefined && bindsHost(secret, host, port);
      });
    },
    async rewrite(request, signal) {
      const texts = [request.url, ...Object.values(request.headers).flatMap(valuesOf)];
      const basic = texts
        .map((text) => /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(text)?.[1])
        .filter((b64) => b64 !== undefined)
        .map((b64) => Buffer.from(b64, "base64").toString("utf8"));
      const seen = [...placeholders].filter(([, placeholder]) =>
        [...texts, ...basic].some((text) => text.includes(placeholder)),
      );
      // One read of the user's secrets per request: bindings and values as of now.
      const live = await current(signal);
      const forbidden = [...placeholders]
        .filter(([name]) => {
          const secret = live.get(name);
          return secret === undefined || !bindsHost(secret, request.host, request.port);
        })
        .map(([, placeholder]) => Buffer.from(placeholder, "latin1"));
      if (seen.length === 0) return { ok: true, headers: request.headers, swapped: [], forbidden };
      const refused = seen
        .filter(([name]) => {
          const secret = live.get(name);
          return secret === undefined || !bindsHost(secret, request.host, request.port);
        })
        .map(([name]) => name);
      if (refused.length > 0) return { ok: false, reason: "secret_exfiltration", names: refused };
      const headers: Headers = { ...request.headers };
      const swaps: (readonly [string, string])[] = [];
      const swapped: string[] = [];
      for (const [name, placeholder] of seen) {
        const secret = live.get(name);
        if (secret === undefined) continue;
        const value = await secret.value(signal);
        swaps.push([placeholder, value]);
        const key = secret.header.toLowerCase();
        const before = headers[key];
        if (typeof before === "string" && before.includes(placeholder)) {
          headers[key] =
            before.trim() === placeholder
              ? secret.template.replace("{value}", value)
              : before.split(placeholder).join(value);
          swapped.push(name);
        }
      }
      const auth = headers.authorization;
      if (typeof auth === "string") {
        const swappedAuth = swapBasic(auth, swaps);
        if (swappedAuth !== undefined) {
          headers.authorization = swappedAuth;
          swapped.push(...seen.map(([name]) => name).filter((name) => !swapped.includes(name)));
        }
      }
      return { ok: true, headers, swapped, forbidden };
    },
  };
}
