import { spawn } from "node:child_process";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { WorkcellError } from "../../../shared/errors/index.ts";
import {
  type ExtractionJob,
  type ExtractionReplyHeader,
  MAX_REPLY_HEADER_BYTES,
} from "./extraction-reply.ts";

const ENTRY = new URL("./extraction-process.ts", import.meta.url).pathname;
/** The child's PATH: prlimit is found here; nothing of the agent-host's env is passed. */
const CHILD_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
/** stderr kept to tell an out-of-memory abort from a crash; the rest is dropped. */
const STDERR_TAIL_BYTES = 4096;

export interface ExtractionProcessLimits {
  /** Wall clock: the child is killed after this long. */
  readonly timeoutMs: number;
  /** RLIMIT_CPU: SIGXCPU after this many CPU seconds, SIGKILL one second later. */
  readonly cpuSeconds: number;
  /** RLIMIT_AS of the child: every mapping counts, ArrayBuffers and wasm included. */
  readonly addressSpaceMb: number;
  /** V8's old-space bound (--max-old-space-size), below the address-space cap. */
  readonly heapMb: number;
  /** Most bytes read from the child's stdout (header + text); more kills it. */
  readonly maxOutputBytes: number;
}

export type ExtractionProcessOutcome =
  | { readonly ok: true; readonly text: string; readonly truncated: boolean }
  | {
      readonly ok: false;
      /** A cap (memory, CPU, time, output, the document's own bounds) stopped it. */
      readonly limit: boolean;
      readonly message: string;
    };

/**
 * Runs one extraction in a fresh child process and settles with its outcome.
 *
 * Why a process, not a worker thread: a worker's resourceLimits bound only V8's heap, and
 * the parsers' ArrayBuffers (PDF.js inflating a stream, JSZip unpacking a part) live
 * outside it, in the agent-host's own address space: one 3.6 MB PDF took the agent-host to
 * 4.1 GiB. A child under `prlimit` (util-linux) has RLIMIT_AS over everything it maps and
 * RLIMIT_CPU over its CPU time, enforced by the kernel; when it dies, only it dies. The
 * document streams to its stdin, the text comes back on its stdout, read only up to
 * `maxOutputBytes`, so the agent-host holds at most the bounded text, never the document.
 *
 * Outcomes are values; an abort of `signal` rejects with its reason; a missing prlimit is
 * `unavailable` (extraction never runs without its caps).
 */
export function runExtractionProcess(
  job: ExtractionJob,
  input: AsyncIterable<Uint8Array>,
  limits: ExtractionProcessLimits,
  signal: AbortSignal,
): Promise<ExtractionProcessOutcome> {
  signal.throwIfAborted();
  const child = spawn(
    "prlimit",
    [
      `--as=${limits.addressSpaceMb * 1024 * 1024}`,
      `--cpu=${limits.cpuSeconds}:${limits.cpuSeconds + 1}`,
      "--core=0",
      "--",
      process.execPath,
      `--max-old-space-size=${limits.heapMb}`,
      ENTRY,
      JSON.stringify(job),
    ],
    { stdio: ["pipe", "pipe", "pipe"], env: { PATH: CHILD_PATH } },
  );
  return new Promise<ExtractionProcessOutcome>((resolve, reject) => {
    const stdout: Buffer[] = [];
    let stdoutBytes = 0;
    let stderrTail = "";
    let settled = false;
    let killedFor: ExtractionProcessOutcome | undefined;

    const finish = (outcome: ExtractionProcessOutcome | { error: unknown }): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      signal.removeEventListener("abort", onAbort);
      if ("error" in outcome) reject(outcome.error);
      else resolve(outcome);
    };
    const kill = (reason: ExtractionProcessOutcome): void => {
      killedFor ??= reason;
      child.kill("SIGKILL");
    };
    const onAbort = (): void => {
      child.kill("SIGKILL");
      finish({ error: signal.reason });
    };
    const timer = setTimeout(
      () =>
        kill({
          ok: false,
          limit: true,
          message: `the extraction took longer than ${limits.timeoutMs} ms`,
        }),
      limits.timeoutMs,
    );
    signal.addEventListener("abort", onAbort, { once: true });

    child.stdout.on("data", (chunk: Buffer) => {
      stdoutBytes += chunk.byteLength;
      if (stdoutBytes > limits.maxOutputBytes) {
        kill({
          ok: false,
          limit: true,
          message: `the extraction wrote more than ${limits.maxOutputBytes} bytes`,
        });
        return;
      }
      stdout.push(chunk);
    });
    child.stderr.setEncoding("utf8");
    child.stderr.on("data", (chunk: string) => {
      stderrTail = (stderrTail + chunk).slice(-STDERR_TAIL_BYTES);
    });
    child.once("error", (error: NodeJS.ErrnoException) => {
      finish({
        error:
          error.code === "ENOENT"
            ? new WorkcellError(
                "unavailable",
                "Document extraction needs prlimit (util-linux) on this node: install util-linux, or confirm without parse.",
              )
            : error,
      });
    });
    child.once("close", (code, exitSignal) => {
      if (killedFor !== undefined) {
        finish(killedFor);
        return;
      }
      const reply = parseReply(Buffer.concat(stdout));
      finish(reply ?? deathOutcome(code, exitSignal, stderrTail, limits));
    });

    // The document goes in as a stream. A child that dies before reading it all breaks
    // the pipe (EPIPE): that is its death's outcome, reported by "close", not an error of
    // ours. An input that cannot be read (the file vanished) fails the extraction.
    pipeline(Readable.from(input), child.stdin).catch((error: NodeJS.ErrnoException) => {
      if (error.code === "EPIPE" || error.code === "ERR_STREAM_PREMATURE_CLOSE") return;
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill("SIGKILL");
      finish({ error });
    });
  });
}

function parseReply(out: Buffer): ExtractionProcessOutcome | undefined {
  const newline = out.indexOf(0x0a);
  if (newline === -1 || newline > MAX_REPLY_HEADER_BYTES) return undefined;
  let header: ExtractionReplyHeader;
  try {
    header = JSON.parse(out.subarray(0, newline).toString("utf8")) as ExtractionReplyHeader;
  } catch {
    return undefined;
  }
  if (!header.ok) return { ok: false, limit: header.limit === true, message: header.message };
  const text = out.subarray(newline + 1);
  if (text.byteLength !== header.textBytes) return undefined;
  return { ok: true, text: text.toString("utf8"), truncated: header.truncated };
}

/**
 * Why a child ended without an answer. A signal is the kernel or V8 enforcing a cap:
 * SIGXCPU / SIGKILL the CPU limit, SIGABRT V8's out-of-memory abort (RLIMIT_AS refused a
 * mapping), SIGSEGV / SIGBUS an allocation that failed where V8 cannot recover.
 */
function deathOutcome(
  code: number | null,
  exitSignal: NodeJS.Signals | null,
  stderrTail: string,
  limits: ExtractionProcessLimits,
): ExtractionProcessOutcome {
  if (exitSignal === "SIGXCPU" || exitSignal === "SIGKILL") {
    return {
      ok: false,
      limit: true,
      message: `the document needs more than ${limits.cpuSeconds} s of CPU time to extract`,
    };
  }
  if (exitSignal !== null || /out of memory|allocation failed/i.test(stderrTail)) {
    return {
      ok: false,
      limit: true,
      message: `the document needs more than ${limits.addressSpaceMb} MiB of memory to extract`,
    };
  }
  return {
    ok: false,
    limit: false,
    message: `the extraction process failed (exit ${code}) without a result`,
  };
}
