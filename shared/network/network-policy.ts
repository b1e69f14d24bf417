import { z } from "@hono/zod-openapi";
import {
  type HostPattern,
  hostPatternSchema,
  parseHostPattern,
  patternAllows,
  patternCovers,
} from "./host-pattern.ts";

// A network policy (docs/architecture.md §13): closed (`none`, the default) or an allow-list of
// host patterns. A user's ceiling is set by an admin (else the deployment's default); a
// run may narrow it with `agent.network.allow`, never widen it.

export const NETWORK_MODES = ["none", "allowlist"] as const;
export type NetworkMode = (typeof NETWORK_MODES)[number];

/** More patterns than this is a list nobody reviews; the proxy checks them per connection. */
export const MAX_ALLOW_PATTERNS = 200;

const allowSchema = z.array(hostPatternSchema).max(MAX_ALLOW_PATTERNS);

export const networkPolicySchema = z
  .object({
    mode: z
      .enum(NETWORK_MODES)
      .describe("`none`: no network at all (the default); `allowlist`: only the `allow` hosts."),
    allow: allowSchema
      .default([])
      .describe("Host patterns; ignored (and stored empty) for `none`."),
  })
  .strict()
  .superRefine((policy, ctx) => {
    if (policy.mode === "allowlist" && policy.allow.length === 0) {
      ctx.addIssue({
        code: "custom",
        path: ["allow"],
        message: "an allowlist needs at least one pattern (use mode none for no network)",
      });
    }
  })
  .openapi("NetworkPolicy")
  .describe("A network policy: `none`, or an allow-list of host patterns.");

export type NetworkPolicy = { readonly mode: NetworkMode; readonly allow: readonly string[] };

export const NO_NETWORK: NetworkPolicy = Object.freeze({ mode: "none", allow: Object.freeze([]) });

/** `agent.network` of a run submission. */
export const runNetworkOptionsSchema = z
  .object({
    allow: allowSchema
      .min(1)
      .describe("Hosts this run may reach: each must be covered by the user's policy, else 422."),
  })
  .strict()
  .describe("Narrows the user's network policy for this run.");

export type RunNetworkOptions = z.output<typeof runNetworkOptionsSchema>;

function parsed(patterns: readonly string[]): HostPattern[] {
  return patterns.flatMap((text) => {
    const pattern = parseHostPattern(text);
    return pattern === undefined ? [] : [pattern];
  });
}

/** The run's patterns that its user's ceiling does not cover (empty: the narrowing is valid). */
export function patternsOutside(ceiling: NetworkPolicy, allow: readonly string[]): string[] {
  if (ceiling.mode === "none") return [...allow];
  const outer = parsed(ceiling.allow);
  return allow.filter((text) => {
    const inner = parseHostPattern(text);
    return inner === undefined || !outer.some((pattern) => patternCovers(pattern, inner));
  });
}

/** Does the policy allow `host:port`? */
export function policyAllows(policy: NetworkPolicy, host: string, port: number): boolean {
  if (policy.mode === "none") return false;
  return parsed(policy.allow).some((pattern) => patternAllows(pattern, host, port));
}

/**
 * The deployment's default ceiling from its environment (WORKCELL_NETWORK_DEFAULT_ALLOW,
 * comma-separated patterns): unset or empty is `none`. Throws on a bad pattern, so a typo
 * stops the process at start instead of silently closing (or opening) the network.
 */
export function defaultPolicyFromEnv(value: string | undefined): NetworkPolicy {
  const allow = (value ?? "")
    .split(",")
    .map((text) => text.trim().toLowerCase())
    .filter((text) => text.length > 0);
  if (allow.length === 0) return NO_NETWORK;
  const bad = allow.filter((text) => parseHostPattern(text) === undefined);
  if (bad.length > 0) {
    throw new Error(`WORKCELL_NETWORK_DEFAULT_ALLOW: not host patterns: ${bad.join(", ")}`);
  }
  return { mode: "allowlist", allow };
}

/** True when `value` is a valid WORKCELL_NETWORK_DEFAULT_ALLOW. */
function isDefaultPolicyText(value: string): boolean {
  try {
    defaultPolicyFromEnv(value);
    return true;
  } catch {
    return false;
  }
}

const NETWORK_DEFAULT_ALLOW_HELP =
  "Host patterns every user may reach unless an admin sets their policy, comma-separated, e.g. pypi.org,files.pythonhosted.org; unset: no network (mode none). Set it to the same value on the API and on every agent-host.";

/**
 * WORKCELL_NETWORK_DEFAULT_ALLOW in the env schemas of the API and the agent-host, which
 * must agree on it (the API checks runs' narrowing against it, the proxy enforces it).
 */
export function networkDefaultAllowVar() {
  return z
    .string()
    .refine(
      isDefaultPolicyText,
      "must be comma-separated host patterns, e.g. pypi.org,*.github.com",
    )
    .optional()
    .describe(NETWORK_DEFAULT_ALLOW_HELP);
}
