import type { Approval } from "../../src/index.ts";
import { type CliContext, EXIT, listOutput, output, table, UsageError } from "../cli-context.ts";

const argumentsText = (approval: Approval) =>
  approval.data.kind === "network"
    ? `${approval.data.host ?? "?"}:${approval.data.port ?? "?"}`
    : approval.data.arguments === undefined
      ? ""
      : JSON.stringify(approval.data.arguments);
/** The tool, or `network` for a connection's approval (its host:port in ARGUMENTS). */
const toolText = (approval: Approval) =>
  approval.data.kind === "network" ? "network" : (approval.data.tool ?? "");

/** `workcell approvals [<run_id>]`: a run's approvals (default: your last run's). */
export async function approvalsCommand(ctx: CliContext): Promise<number> {
  const runId = ctx.args[0] ?? ctx.config.last_run_id;
  if (runId === undefined) throw new UsageError("usage: workcell approvals <run_id>");
  const run = await ctx.client().runs.get(runId, { signal: ctx.signal });
  const approvals = await run.approvals({ signal: ctx.signal });
  listOutput(
    ctx,
    { items: approvals.map((a) => a.data) },
    () =>
      table([
        ["APPROVAL", "STATUS", "TOOL", "ARGUMENTS", "EXPIRES"],
        ...approvals.map((a) => [a.id, a.status, toolText(a), argumentsText(a), a.data.expires_at]),
      ]),
    `Run ${runId} has asked for no approval.`,
  );
  return EXIT.ok;
}

/**
 * `workcell approve <approval_id> [--run <id>] [--for-run] [--deny] [--note <text>]`: decides
 * an approval of the run (default: your last run).
 */
export async function approveCommand(ctx: CliContext): Promise<number> {
  const approvalId = ctx.args[0];
  const runFlag = typeof ctx.flags.run === "string" ? ctx.flags.run : undefined;
  const runId = runFlag ?? ctx.config.last_run_id;
  if (approvalId === undefined || runId === undefined) {
    throw new UsageError("usage: workcell approve <approval_id> [--run <run_id>]");
  }
  const run = await ctx.client().runs.get(runId, { signal: ctx.signal });
  const approval = (await run.approvals({ signal: ctx.signal })).find((a) => a.id === approvalId);
  if (approval === undefined) {
    throw new UsageError(`Run ${runId} has no approval ${approvalId}: see 'workcell approvals'.`);
  }
  const note = typeof ctx.flags.note === "string" ? { note: ctx.flags.note } : {};
  const data =
    ctx.flags.deny === true
      ? await approval.deny({ signal: ctx.signal, ...note })
      : await approval.approve({
          signal: ctx.signal,
          ...note,
          scope: ctx.flags["for-run"] === true ? "run" : "once",
        });
  output(ctx, data, () => `${data.status}: ${toolText(approval)} ${argumentsText(approval)}`);
  return EXIT.ok;
}
