import type { UsageData } from "../../src/index.ts";
import { type CliContext, EXIT, output, table } from "../cli-context.ts";
import { formatBytes, formatCount } from "../human-units.ts";

/** `workcell usage`: the caller's workspace and runs against their limits (--json: raw). */
export async function usageCommand(ctx: CliContext): Promise<number> {
  const usage = await ctx.client().usage({ signal: ctx.signal });
  output(ctx, usage, () => usageTable(usage));
  return EXIT.ok;
}

function usageTable(u: UsageData): string {
  const of = (used: string, limit: string) => `${used} of ${limit}`;
  return table([
    ["workspace", of(formatBytes(u.workspace_bytes), formatBytes(u.limits.workspace_bytes))],
    ["files", of(formatCount(u.workspace_inodes), formatCount(u.limits.workspace_inodes))],
    ["running runs", of(String(u.running_runs), String(u.limits.max_concurrent_runs))],
    ["queued runs", String(u.queued_runs)],
  ]);
}
