import type { UserLimitsData, UserLimitsOverride } from "../../src/index.ts";
import { type CliContext, EXIT, output, table, UsageError } from "../cli-context.ts";

const LIMIT_NAMES = [
  "workspace_bytes",
  "workspace_inodes",
  "max_concurrent_runs",
  "requests_per_minute",
  "egress_bytes_per_run",
  "max_checkpoints_per_thread",
] as const;
type LimitName = (typeof LIMIT_NAMES)[number];

/**
 * `workcell admin limits <uid> [name=value | name=default ...]`: shows the limits in force
 * and which an admin set; with changes, applies them on top of the current overrides (the
 * API's PUT replaces all of them, so an unnamed limit must not silently go back to its
 * default) and shows the result.
 */
export async function limitsCommand(
  ctx: CliContext,
  uid: string,
  changes: readonly string[],
): Promise<number> {
  const admin = ctx.client().admin;
  let limits = await admin.limits(uid, { signal: ctx.signal });
  if (changes.length > 0) {
    const overrides = applyChanges(limits.overrides, changes);
    limits = await admin.setLimits(uid, overrides, { signal: ctx.signal });
  }
  output(ctx, limits, () => limitsTable(limits));
  return EXIT.ok;
}

function limitsTable(limits: UserLimitsData): string {
  return table([
    ["LIMIT", "IN FORCE", "SET BY"],
    ...LIMIT_NAMES.map((name) => [
      name,
      String(limits.limits[name]),
      limits.overrides[name] === undefined ? "default" : "admin",
    ]),
  ]);
}

function applyChanges(current: UserLimitsOverride, changes: readonly string[]): UserLimitsOverride {
  const next: Partial<Record<LimitName, number>> = { ...current };
  for (const change of changes) {
    const match = /^([a-z_]+)=(\d+|default)$/.exec(change);
    const name = match?.[1];
    if (match === null || !isLimitName(name)) {
      throw new UsageError(
        `'${change}' is not <limit>=<number> or <limit>=default; limits: ${LIMIT_NAMES.join(", ")}`,
      );
    }
    if (match[2] === "default") delete next[name];
    else next[name] = Number(match[2]);
  }
  return next;
}

function isLimitName(name: string | undefined): name is LimitName {
  return (LIMIT_NAMES as readonly (string | undefined)[]).includes(name);
}
