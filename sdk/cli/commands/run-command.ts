import type { AgentOptions, RunEvent } from "../../src/index.ts";
import { type CliContext, EXIT, UsageError } from "../cli-context.ts";

/**
 * `workcell run "<input>" [--thread <id>]`: starts a run and streams it. Human output:
 * the assistant's text on stdout, tool calls and the outcome on stderr (so stdout can be
 * piped). `--json`: one event per line, then the finished run. Exit code from the status.
 */
export async function runCommand(ctx: CliContext): Promise<number> {
  const input = ctx.args.join(" ");
  if (input.trim().length === 0)
    throw new UsageError('usage: workcell run "<input>" [--thread <id>]');
  const client = ctx.client();
  const threadId = typeof ctx.flags.thread === "string" ? ctx.flags.thread : undefined;
  const run = await client.runs.create(input, {
    signal: ctx.signal,
    ...(threadId === undefined ? {} : { threadId }),
    ...agentOptions(ctx),
  });
  await ctx.remember({ last_thread_id: run.threadId, last_run_id: run.id });
  if (!ctx.json) ctx.io.stderr(`run ${run.id} (thread ${run.threadId})\n`);
  for await (const event of run.events({ signal: ctx.signal })) {
    if (ctx.json) ctx.io.stdout(`${JSON.stringify(event)}\n`);
    else printEvent(ctx, event);
  }
  const finished = await run.refresh({ signal: ctx.signal });
  if (ctx.json) ctx.io.stdout(`${JSON.stringify({ run: finished })}\n`);
  else {
    const error = finished.error ? `: ${finished.error.code} ${finished.error.message}` : "";
    ctx.io.stderr(`${finished.status}${error}\n`);
  }
  if (finished.status === "succeeded") return EXIT.ok;
  return finished.status === "cancelled" ? EXIT.cancelled : EXIT.failed;
}

function agentOptions(ctx: CliContext): { agent?: AgentOptions } {
  const agent: AgentOptions = {};
  const { flags } = ctx;
  if (typeof flags["max-steps"] === "string") {
    const steps = Number(flags["max-steps"]);
    if (!Number.isInteger(steps) || steps < 1)
      throw new UsageError("--max-steps takes a whole number above 0");
    agent.max_steps = steps;
  }
  if (typeof flags.model === "string") agent.model = flags.model;
  return Object.keys(agent).length === 0 ? {} : { agent };
}

function printEvent(ctx: CliContext, event: RunEvent): void {
  switch (event.type) {
    case "message.delta":
      ctx.io.stdout(event.data.text);
      return;
    case "tool.started":
      ctx.io.stderr(`> ${event.data.name} ${summary(event.data.input)}\n`);
      return;
    case "tool.output":
      // A command's live output: on stderr, so stdout stays the assistant's reply.
      ctx.io.stderr(event.data.text);
      return;
    case "tool.completed":
      if (event.data.is_error) ctx.io.stderr(`! ${event.data.tool_call_id} failed\n`);
      return;
    case "subagent.started":
      ctx.io.stderr(`> sub-agent run ${event.data.run_id}\n`);
      return;
    case "subagent.completed":
      ctx.io.stderr(`< sub-agent run ${event.data.run_id}: ${event.data.status}\n`);
      return;
    default:
      return;
  }
}

function summary(input: unknown): string {
  const text = JSON.stringify(input) ?? "";
  return text.length > 200 ? `${text.slice(0, 200)}…` : text;
}
