import type { UsageData } from "../../src/index.ts";
import { type CliContext, EXIT, output, table } from "../cli-context.ts";

/** `workcell usage`: the caller's workspace and runs against their limits. */
export async function usageCommand(ctx: CliContext): Promise<number> {
  const usage = await ctx.client().usage({ signal: ctx.signal });
  output(ctx, usage, () => usageTable(usage));
  return EXIT.ok;
}

function usageTable(u: UsageData): string {
  return table([
    ["", "USED", "LIMIT"],
    ["workspace bytes", String(u.workspace_bytes), String(u.limits.workspace_bytes)],
    ["workspace inodes", String(u.workspace_inodes), String(u.limits.workspace_inodes)],
    ["running runs", String(u.running_runs), String(u.limits.max_concurrent_runs)],
    ["queued runs", String(u.queued_runs), ""],
  ]);
}
