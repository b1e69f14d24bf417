import { StringDecoder } from "node:string_decoder";
import type { AgentEvent } from "./agent-event.ts";
import { truncateUtf8 } from "./truncate-utf8.ts";

export type OutputStreamName = "stdout" | "stderr";

/** Bounds of a run's live command output (`tool.output` events). */
export interface ToolOutputLimits {
  /** A chunk waits at most this long for more before it is appended as an event. */
  readonly flushMs: number;
  /** Text bytes of one event; more is split over several events. */
  readonly maxEventBytes: number;
  /** Text bytes of all `tool.output` events of one run; past it one marker event, then none. */
  readonly maxRunBytes: number;
}

/**
 * What is left of one run's live-output bound. Shared by every tool call of the run (one
 * per agent loop), so a run of many chatty commands stays bounded as a whole.
 */
export interface ToolOutputBudget {
  remainingBytes: number;
  exhausted: boolean;
}

export function createToolOutputBudget(limits: ToolOutputLimits): ToolOutputBudget {
  return { remainingBytes: limits.maxRunBytes, exhausted: false };
}

/** Receives a running command's output and appends it as `tool.output` events. */
export interface ToolOutputStream {
  /** Raw bytes as the sandbox streams them (any split, even inside a UTF-8 character). */
  push(stream: OutputStreamName, chunk: Buffer): void;
  /**
   * Appends what is pending and waits for every append; rejects with the first append's
   * error (a lost lease), which must end the tool call like any failed emit.
   */
  close(): Promise<void>;
}

type Emit = (event: AgentEvent) => Promise<void>;
type Segment = { stream: OutputStreamName; text: string };

/**
 * Coalesces a command's output into few events: chunks that arrive within `flushMs` of
 * the first pending one become one event (per stream, in arrival order), so a command
 * printing a line a second shows each line about when it is printed, while one printing
 * megabytes in small writes does not become a row per write. Each event is fenced like
 * every event (the run's event log); appends are chained, never concurrent.
 *
 * Pushing never blocks the command (the sandbox must keep draining its pipes): it only
 * buffers up to `maxEventBytes` before appending, and stops buffering once the run's
 * budget is spent or an append failed.
 */
export function createToolOutputStream(p: {
  readonly toolCallId: string;
  readonly emit: Emit;
  readonly limits: ToolOutputLimits;
  readonly budget: ToolOutputBudget;
}): ToolOutputStream {
  const decoders = { stdout: new StringDecoder("utf8"), stderr: new StringDecoder("utf8") };
  let pending: Segment[] = [];
  let pendingBytes = 0;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let chain: Promise<void> = Promise.resolve();
  let failure: { error: unknown } | undefined;

  const append = (data: Extract<AgentEvent, { type: "tool.output" }>["data"]) => {
    chain = chain.then(async () => {
      if (failure !== undefined) return;
      try {
        await p.emit({ type: "tool.output", data });
      } catch (error) {
        failure = { error };
      }
    });
  };

  const flush = (): void => {
    if (timer !== undefined) clearTimeout(timer);
    timer = undefined;
    const segments = pending;
    pending = [];
    pendingBytes = 0;
    for (const segment of segments) {
      let rest = segment.text;
      while (rest !== "" && !p.budget.exhausted) {
        const room = Math.min(p.limits.maxEventBytes, p.budget.remainingBytes);
        const piece = truncateUtf8(rest, room);
        if (piece.text !== "") {
          p.budget.remainingBytes -= Buffer.byteLength(piece.text, "utf8");
          append({ tool_call_id: p.toolCallId, stream: segment.stream, text: piece.text });
        }
        rest = rest.slice(piece.text.length);
        if (rest !== "" && piece.text.length === 0) {
          // Not even one character fits in what is left of the run's bound: cut here.
          p.budget.exhausted = true;
          append({
            tool_call_id: p.toolCallId,
            stream: segment.stream,
            text: `\n[live output truncated: this run's ${p.limits.maxRunBytes}-byte bound for live command output is reached; tool.completed still has the command's result]\n`,
            truncated: true,
          });
        }
      }
    }
  };

  const add = (stream: OutputStreamName, text: string): void => {
    if (text === "" || p.budget.exhausted || failure !== undefined) return;
    const last = pending.at(-1);
    if (last?.stream === stream) last.text += text;
    else pending.push({ stream, text });
    pendingBytes += Buffer.byteLength(text, "utf8");
    if (pendingBytes >= p.limits.maxEventBytes) flush();
    else timer ??= setTimeout(flush, p.limits.flushMs);
  };

  return {
    push(stream, chunk) {
      add(stream, decoders[stream].write(chunk));
    },
    async close() {
      add("stdout", decoders.stdout.end());
      add("stderr", decoders.stderr.end());
      flush();
      await chain;
      if (failure !== undefined) throw failure.error;
    },
  };
}
