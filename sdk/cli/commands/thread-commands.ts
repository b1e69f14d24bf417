import type { ThreadData } from "../../src/index.ts";
import { type CliContext, EXIT, listOutput, output, table, UsageError } from "../cli-context.ts";

/** `workcell threads [ls] | show <id> | rm <id>` */
export async function threadsCommand(ctx: CliContext): Promise<number> {
  const [sub = "ls", id] = ctx.args;
  const client = ctx.client();
  const signal = ctx.signal;
  if (sub === "ls") {
    const threads: ThreadData[] = [];
    for await (const thread of client.threads.all({ signal })) threads.push(thread.data);
    listOutput(
      ctx,
      { items: threads },
      () =>
        table([
          ["THREAD", "CREATED", "STATUS", "TITLE"],
          ...threads.map((t) => [t.thread_id, t.created_at, t.status, t.title ?? ""]),
        ]),
      "No threads yet: 'workcell run \"<input>\"' starts one.",
    );
    return EXIT.ok;
  }
  if (id === undefined) throw new UsageError(`usage: workcell threads ${sub} <thread_id>`);
  if (sub === "show") {
    const thread = await client.threads.get(id, { signal });
    output(ctx, thread.data, () =>
      table(Object.entries(thread.data).map(([k, v]) => [k, String(v ?? "")])),
    );
    return EXIT.ok;
  }
  if (sub === "rm") {
    await client.threads.delete(id, { signal });
    output(ctx, { deleted: id }, () => `deleted ${id}`);
    return EXIT.ok;
  }
  throw new UsageError("usage: workcell threads [ls | show <id> | rm <id>]");
}

/** `workcell changes [<run_id>]` (default: the last run) */
export async function changesCommand(ctx: CliContext): Promise<number> {
  const runId = ctx.args[0] ?? ctx.config.last_run_id;
  if (runId === undefined) throw new UsageError("usage: workcell changes <run_id>");
  const run = await ctx.client().runs.get(runId, { signal: ctx.signal });
  const changes = await run.changes({ signal: ctx.signal });
  listOutput(
    ctx,
    changes,
    () =>
      [
        table(changes.items.map((c) => [c.change, String(c.size), c.path])),
        changes.truncated ? "(list truncated)" : "",
      ].join("\n"),
    `Run ${runId} changed no files in its Workdir.`,
  );
  return EXIT.ok;
}

/** `workcell cancel <run_id>` */
export async function cancelCommand(ctx: CliContext): Promise<number> {
  const runId = ctx.args[0] ?? ctx.config.last_run_id;
  if (runId === undefined) throw new UsageError("usage: workcell cancel <run_id>");
  const run = await ctx.client().runs.get(runId, { signal: ctx.signal });
  const data = await run.cancel({ signal: ctx.signal });
  output(ctx, data, () => `cancel requested for ${runId} (${data.status})`);
  return EXIT.ok;
}
