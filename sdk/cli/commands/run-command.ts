import type { AgentOptions, RunEvent } from "../../src/index.ts";
import { type CliContext, UsageError } from "../cli-context.ts";
import { replyEchoFilter } from "../reply-echo-filter.ts";
import { runOutcome } from "../run-outcome.ts";
import { askApproval, askFlag } from "./approval-prompt.ts";
import { allowFlag } from "./network-command.ts";

/**
 * `workcell run "<input>" [--thread <id>] [--allow host,host]`: starts a run and streams it. Human output:
 * the assistant's text on stdout, tool calls and the outcome on stderr (so stdout can be
 * piped). `--json`: one event per line, then the finished run. Exit code: run-outcome.ts.
 */
export async function runCommand(ctx: CliContext): Promise<number> {
  const input = ctx.args.join(" ");
  if (input.trim().length === 0)
    throw new UsageError('usage: workcell run "<input>" [--thread <id>] [--allow host,host]');
  const client = ctx.client();
  const threadId = typeof ctx.flags.thread === "string" ? ctx.flags.thread : undefined;
  const run = await client.runs.create(input, {
    signal: ctx.signal,
    ...(threadId === undefined ? {} : { threadId }),
    ...agentOptions(ctx),
  });
  await ctx.remember({ last_thread_id: run.threadId, last_run_id: run.id });
  if (!ctx.json) ctx.io.stderr(`run ${run.id} (thread ${run.threadId})\n`);
  const printer = humanPrinter(ctx);
  let completed: RunEvent | undefined;
  for await (const event of run.events({ signal: ctx.signal })) {
    if (event.type === "run.completed") completed = event;
    if (ctx.json) ctx.io.stdout(`${JSON.stringify(event)}\n`);
    else printer.event(event);
    if (event.type === "approval.requested" && !ctx.json) await askApproval(ctx, run, event);
  }
  const finished = await run.refresh({ signal: ctx.signal });
  const outcome = runOutcome(finished, completed);
  if (ctx.json) ctx.io.stdout(`${JSON.stringify({ run: finished })}\n`);
  else printer.status(`${outcome.line}\n`);
  return outcome.exitCode;
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
  // Checkpoint the Workdir before the run, so 'workcell undo' can give its files back.
  if (flags.checkpoint === true) agent.checkpoint = true;
  const allow = allowFlag(flags.allow);
  if (allow !== undefined) agent.network = { allow };
  const ask = askFlag(flags.ask);
  if (ask !== undefined) agent.approvals = ask;
  return Object.keys(agent).length === 0 ? {} : { agent };
}

/**
 * The assistant's text goes to stdout; tool calls, their live output and the outcome to
 * stderr. On a terminal both interleave, so nothing starts on a line the other stream
 * left unfinished: that line is ended first, on its own stream (stdout still holds only
 * the assistant's words, stderr only the rest).
 */
function humanPrinter(ctx: CliContext) {
  const midLine = { stdout: false, stderr: false };
  const write = (stream: "stdout" | "stderr", text: string) => {
    if (text.length === 0) return;
    const other = stream === "stdout" ? "stderr" : "stdout";
    if (midLine[other]) ctx.io[other]("\n");
    midLine[other] = false;
    ctx.io[stream](text);
    midLine[stream] = !text.endsWith("\n");
  };
  const toolNames = new Map<string, string>();
  const shownLive = new Set<string>();
  // A pipe gets the reply as it is (stdout is the data); a terminal gets it once.
  const reply = ctx.io.stdoutIsTerminal
    ? replyEchoFilter((text) => write("stdout", text))
    : {
        toolCompleted() {},
        toolStarted() {},
        delta: (text: string) => write("stdout", text),
        end() {},
      };
  const status = (line: string) => {
    if (midLine.stderr) ctx.io.stderr("\n");
    midLine.stderr = false;
    write("stderr", line);
  };
  const event = (e: RunEvent): void => {
    switch (e.type) {
      case "message.delta":
        reply.delta(e.data.text);
        return;
      case "message.completed":
      case "run.completed":
        reply.end();
        return;
      case "tool.output":
        shownLive.add(e.data.tool_call_id);
        write("stderr", e.data.text);
        return;
      case "tool.started":
        reply.toolStarted();
        toolNames.set(e.data.tool_call_id, e.data.name);
        status(`> ${e.data.name} ${summary(e.data.input)}\n`);
        return;
      case "tool.completed":
        reply.toolCompleted(resultText(e.data.output), shownLive.has(e.data.tool_call_id));
        if (e.data.is_error) {
          const code = typeof e.data.exit_code === "number" ? ` (exit ${e.data.exit_code})` : "";
          status(`! ${toolNames.get(e.data.tool_call_id) ?? e.data.tool_call_id} failed${code}\n`);
        }
        return;
      case "subagent.started":
        status(`> sub-agent run ${e.data.run_id}\n`);
        return;
      case "subagent.completed":
        status(`< sub-agent run ${e.data.run_id}: ${e.data.status}\n`);
        return;
      default:
        return;
    }
  };
  return { event, status };
}

function resultText(output: unknown): string {
  if (typeof output === "string") return output;
  const text = (output as { text?: unknown } | null | undefined)?.text;
  return typeof text === "string" ? text : "";
}

function summary(input: unknown): string {
  const text = JSON.stringify(input) ?? "";
  return text.length > 200 ? `${text.slice(0, 200)}…` : text;
}
