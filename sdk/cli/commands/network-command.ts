import type { NetworkPolicy, UserNetworkData } from "../../src/index.ts";
import { type CliContext, EXIT, output, table, UsageError } from "../cli-context.ts";

/**
 * `workcell admin network <uid> [none | <pattern>,<pattern>...]`: shows a user's network
 * ceiling and where it comes from; with an argument, replaces it (`none` closes it, a
 * comma-separated list of host patterns makes an allow-list) and shows the result.
 */
export async function networkCommand(
  ctx: CliContext,
  uid: string,
  change: string | undefined,
): Promise<number> {
  const admin = ctx.client().admin;
  const data =
    change === undefined
      ? await admin.network(uid, { signal: ctx.signal })
      : await admin.setNetwork(uid, policyOf(change), { signal: ctx.signal });
  output(ctx, data, () => networkTable(data));
  return EXIT.ok;
}

function policyOf(text: string): NetworkPolicy {
  if (text === "none") return { mode: "none", allow: [] };
  const allow = text
    .split(",")
    .map((pattern) => pattern.trim())
    .filter((pattern) => pattern.length > 0);
  if (allow.length === 0)
    throw new UsageError("give `none` or host patterns, e.g. pypi.org,*.github.com");
  return { mode: "allowlist", allow };
}

function networkTable(data: UserNetworkData): string {
  const hosts = data.policy.mode === "none" ? "(no network)" : (data.policy.allow ?? []).join(", ");
  return table([
    ["UID", "MODE", "SET BY", "HOSTS"],
    [data.uid, data.policy.mode, data.source === "user" ? "admin" : "default", hosts],
  ]);
}

/** `--allow a,b`: the run's narrowing of its user's policy (`agent.network.allow`). */
export function allowFlag(value: string | boolean | string[] | undefined): string[] | undefined {
  if (typeof value !== "string") return undefined;
  const allow = value
    .split(",")
    .map((pattern) => pattern.trim())
    .filter((pattern) => pattern.length > 0);
  if (allow.length === 0) throw new UsageError("--allow takes host patterns, e.g. pypi.org");
  return allow;
}
