import type { Logger } from "pino";
import { z } from "zod";
import type { TerminalRunStatus } from "../../../shared/contracts/run.ts";
import type { LoopApprovals, LoopPause, ResumeDecision } from "../../approvals/loop-approvals.ts";
import type { AgentEvent, EmitFn, RunError } from "./agent-event.ts";
import { type AgentLimits, DEFAULT_AGENT_LIMITS } from "./agent-limits.ts";
import {
  addUsage,
  type ChatMessage,
  type TokenUsage,
  type ToolCall,
  type ToolMessage,
  ZERO_USAGE,
} from "./chat-message.ts";
import { createDeltaBuffer } from "./delta-buffer.ts";
import type { ModelClient, ModelResult } from "./model-client.ts";
import { type Tool, type ToolEnvironment, type ToolResult, toolSpecOf } from "./tool.ts";
import { classifyToolError, refusalResult } from "./tool-failure.ts";
import {
  createToolOutputBudget,
  createToolOutputStream,
  type ToolOutputBudget,
} from "./tool-output-stream.ts";
import { capToolOutput } from "./truncate-utf8.ts";

export interface AgentLoopInput {
  readonly model: ModelClient;
  readonly tools: readonly Tool[];
  /** Sandbox, UserWorkspace, Workdir and sub-agent spawner the tools work with. */
  readonly toolEnv: ToolEnvironment;
  /** system-prompt.ts builds it; "" sends none. */
  readonly systemPrompt: string;
  /** The thread so far (user and assistant messages), ending with this run's user message. */
  readonly messages: readonly ChatMessage[];
  readonly limits?: Partial<AgentLimits>;
  /** The run's cancellation: the loop ends `cancelled`, a running exec is killed. */
  readonly signal: AbortSignal;
  readonly emit: EmitFn;
  readonly logger: Logger;
  /** The run's approval policy and, when resuming, the decision (../../approvals/). */
  readonly approvals?: LoopApprovals;
}

export interface AgentLoopResult {
  /** `awaiting_approval`: stopped before a call that needs a person; `paused` says where. */
  readonly status: TerminalRunStatus | "awaiting_approval";
  readonly paused?: LoopPause;
  /** The final answer when `succeeded` (what to store in `messages`), else "". */
  readonly finalText: string;
  /** Why, when `failed`. */
  readonly error?: RunError;
  /** Messages this run added (assistant and tool), in order. */
  readonly newMessages: readonly ChatMessage[];
  /** Model calls made. */
  readonly turns: number;
  readonly usage: TokenUsage;
  /**
   * The exit code of the last command a tool call ran to its end (bash), if any: with the
   * shell model, the exit code of the run's one command (drive-run puts it in run.completed).
   */
  readonly lastExitCode?: number;
}

/** Marks an error of `emit` on its way out: it ends the loop, never becomes a result. */
class EmitFailed extends Error {
  override readonly name = "EmitFailed";
  constructor(cause: unknown) {
    super("emit failed", { cause });
  }
}

type ToolCallOutcome =
  | {
      readonly kind: "done";
      readonly message: ToolMessage;
      readonly timedOut: boolean;
      /** The command's exit code, for a call that ran one (bash) and it exited. */
      readonly exitCode?: number;
    }
  | { readonly kind: "cancelled" }
  | { readonly kind: "fatal"; readonly error: RunError };

/**
 * The agent loop of one run: call the model, run the tool calls it asks for one after
 * the other, feed the results back, until the model answers without tool calls.
 *
 * It ends — returning the ending, and emitting no terminal event: the worker's finishRun
 * writes the one `run.completed`, in the transaction that sets the run's status —
 * `succeeded` on a final answer; `cancelled` when `signal` aborts (between steps, or inside a model call or a
 * tool, whose I/O gets the same signal); `failed` on maxTurns (`max_turns_exceeded`), on
 * the token budget (`token_budget_exceeded`), on a model failure (`model_<kind>`) or on a
 * fatal tool error (`internal`, `stale_generation` …). A refused or failed tool call is
 * not an end: the model sees it as the call's result and carries on.
 *
 * It resolves with the result in every one of those cases and rejects only when `emit`
 * rejects, with that error, immediately: a worker that can no longer write (lost lease)
 * must not keep acting.
 */
export async function runAgentLoop(input: AgentLoopInput): Promise<AgentLoopResult> {
  try {
    return await loop(input);
  } catch (error) {
    if (error instanceof EmitFailed) throw error.cause;
    throw error;
  }
}

async function loop(input: AgentLoopInput): Promise<AgentLoopResult> {
  const limits: AgentLimits = { ...DEFAULT_AGENT_LIMITS, ...input.limits };
  const { model, signal, logger } = input;
  const toolsByName = indexTools(input.tools);
  const specs = input.tools.map(toolSpecOf);
  const system: ChatMessage[] =
    input.systemPrompt === "" ? [] : [{ role: "system", content: input.systemPrompt }];
  const resume = input.approvals?.resume;
  const newMessages: ChatMessage[] = [...(resume?.pause.newMessages ?? [])];
  let usage = resume?.pause.usage ?? ZERO_USAGE;
  let turns = resume?.pause.turns ?? 0;
  // A tool call of the previous turn that hit its time limit. If the model answers right
  // after it without trying anything else (the shell model always does), nothing handled
  // the timeout: the run fails with command_timeout instead of reading as succeeded.
  let unhandledTimeout: RunError | undefined;
  let lastExitCode: number | undefined = resume?.pause.lastExitCode;
  const liveOutput = createToolOutputBudget(toolOutputLimits(limits));

  const emit = async (event: AgentEvent): Promise<void> => {
    try {
      await input.emit(event);
    } catch (error) {
      throw new EmitFailed(error);
    }
  };
  const end = async (
    status: AgentLoopResult["status"],
    error?: RunError,
    finalText = "",
  ): Promise<AgentLoopResult> => {
    const log = {
      status,
      turns,
      usage,
      ...(error === undefined ? {} : { error_code: error.code }),
    };
    logger.info(log, "agent loop ended");
    return {
      status,
      finalText,
      ...(error === undefined ? {} : { error }),
      newMessages,
      turns,
      usage,
      ...(lastExitCode === undefined ? {} : { lastExitCode }),
    };
  };

  // Runs the tool calls of one assistant message in order; a result ends the loop.
  const runCalls = async (
    calls: readonly ToolCall[],
    decision?: ResumeDecision,
  ): Promise<AgentLoopResult | undefined> => {
    for (const [n, call] of calls.entries()) {
      const decided = n === 0 ? decision : undefined;
      if (decided === undefined && input.approvals?.needsApproval(call) === true) {
        logger.info({ tool: call.name, tool_call_id: call.id }, "tool call awaits approval");
        const paused: LoopPause = {
          newMessages: [...newMessages],
          pendingCalls: calls.slice(n),
          turns,
          usage,
          ...(lastExitCode === undefined ? {} : { lastExitCode }),
        };
        return { ...(await end("awaiting_approval")), paused };
      }
      const outcome = signal.aborted
        ? ({ kind: "cancelled" } as const)
        : await decidedToolCall(call, decided, { toolsByName, input, limits, liveOutput, emit });
      if (outcome.kind === "done") {
        newMessages.push(outcome.message);
        if (outcome.exitCode !== undefined) lastExitCode = outcome.exitCode;
        if (outcome.timedOut) {
          unhandledTimeout = {
            code: "command_timeout",
            message: `The '${call.name}' call hit its time limit and was killed: make the command finish sooner or give it a longer timeout (timeout_ms).`,
          };
        }
        if (decided?.approved === false && input.approvals?.denialFails === true) {
          return end("failed", decided.error);
        }
        continue;
      }
      // Every tool call of an assistant message needs a result, or the transcript cannot
      // be sent to a model again (e.g. when the thread continues).
      const cancelled = outcome.kind === "cancelled";
      newMessages.push({
        role: "tool",
        toolCallId: call.id,
        content: cancelled ? "Cancelled." : `Failed: ${outcome.error.message}`,
      });
      for (const skipped of calls.slice(n + 1)) {
        const note = cancelled ? "Not run: the run was cancelled." : "Not run: the run failed.";
        newMessages.push({ role: "tool", toolCallId: skipped.id, content: note });
      }
      return outcome.kind === "cancelled" ? end("cancelled") : end("failed", outcome.error);
    }
    return undefined;
  };

  await emit({ type: "run.status", data: { status: "running" } });
  if (resume !== undefined) {
    const stop = await runCalls(resume.pause.pendingCalls, resume.decision);
    if (stop !== undefined) return stop;
  }
  for (;;) {
    if (signal.aborted) return end("cancelled");
    if (turns >= limits.maxTurns) {
      return end("failed", {
        code: "max_turns_exceeded",
        message: `The agent stopped after ${turns} model turns without a final answer: raise the step limit (agent.max_steps) or split the task.`,
      });
    }
    const spent = usage.inputTokens + usage.outputTokens;
    if (limits.maxTotalTokens !== undefined && spent >= limits.maxTotalTokens) {
      return end("failed", {
        code: "token_budget_exceeded",
        message: `The agent used ${spent} tokens, over this run's budget of ${limits.maxTotalTokens}: split the task into smaller runs.`,
      });
    }
    turns++;

    const deltas = createDeltaBuffer({
      emitText: (text) => emit({ type: "message.delta", data: { text } }),
      flushChars: limits.deltaFlushChars,
      flushMs: limits.deltaFlushMs,
    });
    let result: ModelResult;
    try {
      result = await model.complete(
        {
          messages: [...system, ...input.messages, ...newMessages],
          tools: specs,
          ...(limits.maxOutputTokensPerTurn === undefined
            ? {}
            : { maxOutputTokens: limits.maxOutputTokensPerTurn }),
          onTextDelta: (text) => deltas.push(text),
        },
        signal,
      );
    } catch (error) {
      if (error instanceof EmitFailed) throw error;
      // What was streamed before the abort stays in the event stream, complete.
      await deltas.flush();
      if (signal.aborted) return end("cancelled");
      logger.error({ err: error, model: model.name }, "model client threw");
      return end("failed", {
        code: "internal",
        message:
          "The model client failed unexpectedly: retry the run; if it persists, report it to the operator.",
      });
    }
    await deltas.flush();
    if (!result.ok) {
      return end("failed", {
        code: `model_${result.failure.kind}`,
        message: result.failure.message,
      });
    }
    usage = addUsage(usage, result.turn.usage);
    const reply = result.turn.message;
    newMessages.push(reply);
    if (reply.content !== "") {
      await emit({ type: "message.completed", data: { text: reply.content } });
    }
    if (reply.toolCalls.length === 0) {
      return unhandledTimeout === undefined
        ? end("succeeded", undefined, reply.content)
        : end("failed", unhandledTimeout, reply.content);
    }
    unhandledTimeout = undefined;

    const stop = await runCalls(reply.toolCalls);
    if (stop !== undefined) return stop;
  }
}

interface CallContext {
  readonly toolsByName: ReadonlyMap<string, Tool>;
  readonly input: AgentLoopInput;
  readonly limits: AgentLimits;
  readonly liveOutput: ToolOutputBudget;
  readonly emit: (event: AgentEvent) => Promise<void>;
}

/**
 * One tool call, with a person's decision when it waited for one: approved, it runs once
 * its approval is claimed (a failed claim ends the run, the call not run); denied, the
 * agent gets the refusal as the call's result.
 */
async function decidedToolCall(
  call: ToolCall,
  decision: ResumeDecision | undefined,
  { toolsByName, input, limits, liveOutput, emit }: CallContext,
): Promise<ToolCallOutcome> {
  if (decision?.approved === true) {
    const refused = await decision.claim();
    if (refused !== undefined) return { kind: "fatal", error: refused };
  }
  if (decision?.approved === false) {
    const parsed = parseArguments(call.arguments);
    await emit({
      type: "tool.started",
      data: {
        tool_call_id: call.id,
        name: call.name,
        input: parsed.ok ? parsed.value : call.arguments,
      },
    });
    await emit({
      type: "tool.completed",
      data: { tool_call_id: call.id, is_error: true, output: { text: decision.refusal } },
    });
    return {
      kind: "done",
      message: { role: "tool", toolCallId: call.id, content: decision.refusal },
      timedOut: false,
    };
  }
  return runToolCall(call, toolsByName, input, { limits, liveOutput }, emit);
}

async function runToolCall(
  call: ToolCall,
  toolsByName: ReadonlyMap<string, Tool>,
  input: AgentLoopInput,
  { limits, liveOutput }: { readonly limits: AgentLimits; readonly liveOutput: ToolOutputBudget },
  emit: (event: AgentEvent) => Promise<void>,
): Promise<ToolCallOutcome> {
  const { signal } = input;
  const logger = input.logger.child({ tool: call.name, tool_call_id: call.id });
  const parsed = parseArguments(call.arguments);
  await emit({
    type: "tool.started",
    data: {
      tool_call_id: call.id,
      name: call.name,
      input: parsed.ok ? parsed.value : call.arguments,
    },
  });

  let result: ToolResult;
  const tool = toolsByName.get(call.name);
  if (tool === undefined) {
    result = refusalResult(
      "invalid_request",
      "unknown_tool",
      `There is no tool '${call.name}'. Available tools: ${[...toolsByName.keys()].join(", ")}.`,
    );
  } else if (!parsed.ok) {
    result = refusalResult(
      "invalid_request",
      "invalid_arguments",
      `The arguments of '${call.name}' are not valid JSON (${parsed.error}): send one JSON object.`,
    );
  } else {
    const args = tool.parameters.safeParse(parsed.value);
    if (!args.success) {
      result = refusalResult(
        "invalid_request",
        "invalid_arguments",
        `The arguments of '${call.name}' do not match its schema:\n${z.prettifyError(args.error)}`,
      );
    } else {
      try {
        result = await tool.execute(
          args.data,
          {
            ...input.toolEnv,
            toolCallId: call.id,
            emit,
            logger,
            liveOutput: () =>
              createToolOutputStream({
                toolCallId: call.id,
                emit,
                limits: toolOutputLimits(limits),
                budget: liveOutput,
              }),
          },
          signal,
        );
      } catch (error) {
        if (error instanceof EmitFailed) throw error;
        const failure = classifyToolError(error, signal);
        switch (failure.kind) {
          case "refused":
            result = failure.result;
            break;
          case "cancelled":
            await emit({
              type: "tool.completed",
              data: { tool_call_id: call.id, is_error: true, output: { text: "cancelled" } },
            });
            return { kind: "cancelled" };
          case "fatal":
            logger.error(
              { err: error, error_code: failure.error.code },
              "tool failed; ending the run",
            );
            await emit({
              type: "tool.completed",
              data: {
                tool_call_id: call.id,
                is_error: true,
                output: { text: failure.error.message },
              },
            });
            return { kind: "fatal", error: failure.error };
        }
      }
    }
  }

  const content = capToolOutput(result.content, limits.maxToolOutputBytes);
  if (result.isError) logger.debug({ details: result.details }, "tool call refused or failed");
  const exitCode = exitCodeOf(result);
  await emit({
    type: "tool.completed",
    data: {
      tool_call_id: call.id,
      is_error: result.isError,
      output: { text: content, ...result.details },
      ...(exitCode === undefined ? {} : { exit_code: exitCode }),
    },
  });
  return {
    kind: "done",
    message: { role: "tool", toolCallId: call.id, content },
    timedOut: result.details?.status === "timed_out",
    ...(typeof exitCode === "number" ? { exitCode } : {}),
  };
}

function toolOutputLimits(limits: AgentLimits) {
  return {
    flushMs: limits.toolOutputFlushMs,
    maxEventBytes: limits.toolOutputMaxEventBytes,
    maxRunBytes: limits.toolOutputMaxRunBytes,
  };
}

type Parsed = { ok: true; value: unknown } | { ok: false; error: string };

function parseArguments(text: string): Parsed {
  try {
    return { ok: true, value: JSON.parse(text === "" ? "{}" : text) };
  } catch (error) {
    return { ok: false, error: (error as Error).message };
  }
}

function indexTools(tools: readonly Tool[]): ReadonlyMap<string, Tool> {
  const byName = new Map<string, Tool>();
  for (const tool of tools) {
    // Two tools of one name would make the model's calls ambiguous: a wiring bug.
    if (byName.has(tool.name)) throw new Error(`Two tools are named '${tool.name}'`);
    byName.set(tool.name, tool);
  }
  return byName;
}

/**
 * A command tool's exit code (its details carry `exit_code`): a number when it exited, null
 * when it was killed (timeout); undefined for tools that run no command.
 */
function exitCodeOf(result: ToolResult): number | null | undefined {
  const code = result.details?.exit_code;
  if (code === null) return null;
  return typeof code === "number" && Number.isInteger(code) ? code : undefined;
}
