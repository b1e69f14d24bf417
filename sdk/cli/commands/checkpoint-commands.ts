import type { CheckpointData } from "../../src/index.ts";
import { type CliContext, EXIT, listOutput, output, table, UsageError } from "../cli-context.ts";
import { formatBytes } from "../human-units.ts";

/** `workcell checkpoints [ls] | create [label] | rm <id>` (of --thread, else the last run's) */
export async function checkpointsCommand(ctx: CliContext): Promise<number> {
  const [sub = "ls", arg] = ctx.args;
  const client = ctx.client();
  const threadId = ctx.threadId();
  const signal = ctx.signal;
  if (sub === "ls") {
    const items = await client.checkpoints.list(threadId, { signal });
    listOutput(
      ctx,
      { items },
      () =>
        table([
          ["CHECKPOINT", "CREATED", "SOURCE", "FILES", "SIZE", "RUN / LABEL"],
          ...items.map((c) => [
            c.checkpoint_id,
            c.created_at,
            c.source,
            String(c.files),
            formatBytes(c.bytes),
            c.run_id ?? c.label ?? "",
          ]),
        ]),
      "No checkpoints yet: 'workcell checkpoints create' takes one.",
    );
    return EXIT.ok;
  }
  if (sub === "create") {
    const taken = await client.checkpoints.create(threadId, {
      signal,
      ...(arg === undefined ? {} : { label: arg }),
    });
    output(
      ctx,
      taken,
      () => `checkpoint ${taken.checkpoint_id}: ${taken.files} files, ${formatBytes(taken.bytes)}`,
    );
    return EXIT.ok;
  }
  if (sub === "rm" && arg !== undefined) {
    await client.checkpoints.delete(threadId, arg, { signal });
    output(ctx, { deleted: arg }, () => `deleted ${arg}`);
    return EXIT.ok;
  }
  throw new UsageError(
    "usage: workcell checkpoints [ls | create [label] | rm <id>] [--thread <id>]",
  );
}

/** `workcell restore <checkpoint_id>`: the Workdir becomes the checkpoint. */
export async function restoreCommand(ctx: CliContext): Promise<number> {
  const checkpointId = ctx.args[0];
  if (checkpointId === undefined)
    throw new UsageError("usage: workcell restore <checkpoint_id> [--thread <id>]");
  return restore(ctx, ctx.threadId(), checkpointId);
}

/** `workcell undo [<run_id>]`: restores the checkpoint taken before the run (default: the last). */
export async function undoCommand(ctx: CliContext): Promise<number> {
  const runId = ctx.args[0] ?? ctx.config.last_run_id;
  if (runId === undefined) throw new UsageError("usage: workcell undo [<run_id>]");
  const run = await ctx.client().runs.get(runId, { signal: ctx.signal });
  const items = await ctx.client().checkpoints.list(run.threadId, { signal: ctx.signal });
  const before = items.find((c: CheckpointData) => c.run_id === runId);
  if (before === undefined) {
    throw new UsageError(
      `Run ${runId} has no checkpoint: start runs with checkpoints on (the node's default where it reflinks), or restore another one ('workcell checkpoints').`,
    );
  }
  return restore(ctx, run.threadId, before.checkpoint_id);
}

async function restore(ctx: CliContext, threadId: string, checkpointId: string): Promise<number> {
  const result = await ctx
    .client()
    .checkpoints.restore(threadId, checkpointId, { signal: ctx.signal });
  output(
    ctx,
    result,
    () =>
      `restored ${result.restored.checkpoint_id}; the files it replaced are checkpoint ${result.saved.checkpoint_id} ('workcell restore ${result.saved.checkpoint_id}' undoes this)`,
  );
  return EXIT.ok;
}

/** `workcell fork [<checkpoint_id>]`: a new thread with a copy of the checkpoint (or the Workdir). */
export async function forkCommand(ctx: CliContext): Promise<number> {
  const checkpointId = ctx.args[0];
  const thread = await ctx.client().checkpoints.fork(ctx.threadId(), {
    signal: ctx.signal,
    ...(checkpointId === undefined ? {} : { checkpointId }),
  });
  output(
    ctx,
    thread,
    () =>
      `forked into thread ${thread.thread_id} ('workcell run --thread ${thread.thread_id} ...')`,
  );
  return EXIT.ok;
}
