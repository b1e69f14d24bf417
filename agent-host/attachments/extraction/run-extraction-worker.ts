import { Worker } from "node:worker_threads";
import type { DocumentExtractionRequest } from "./extract-document.ts";
import type { WorkerReply } from "./worker-reply.ts";

/** Young-generation heap of the worker; the old generation gets `heapMb`. */
const WORKER_YOUNG_GENERATION_MB = 32;

export interface ExtractionWorkerOptions {
  readonly timeoutMs: number;
  readonly heapMb: number;
  readonly signal: AbortSignal;
}

export type WorkerOutcome =
  | { readonly ok: true; readonly text: string; readonly truncated: boolean }
  | { readonly ok: false; readonly message: string };

/**
 * Runs one document extraction in a fresh worker thread and settles with its reply.
 *
 * Why a thread per document: the parsers (PDF.js, mammoth, domino) take untrusted input
 * and can spend unbounded CPU or heap on it. In a worker, the heap is capped by
 * `resourceLimits` (the thread dies with ERR_WORKER_OUT_OF_MEMORY, the data plane lives
 * on), a timeout or the caller's abort terminates it mid-parse, and nothing it loads
 * (unpdf's DOMMatrix polyfill, PDF.js globals) touches the data plane's own globals.
 *
 * A failed parse, a timeout and an out-of-memory death are outcomes (`ok: false`); only
 * an abort of `signal` rejects, with its reason.
 */
export function runExtractionWorker(
  request: DocumentExtractionRequest,
  options: ExtractionWorkerOptions,
): Promise<WorkerOutcome> {
  options.signal.throwIfAborted();
  // Transfer, never share: a Buffer may be a view into Node's shared allocation pool,
  // and transferring that pool would detach memory other code still uses. A view is
  // copied first (`new Uint8Array(view)` copies; Buffer#slice would not).
  const owned =
    request.bytes.byteOffset === 0 &&
    request.bytes.byteLength === request.bytes.buffer.byteLength &&
    request.bytes.buffer instanceof ArrayBuffer;
  const bytes = owned ? request.bytes : new Uint8Array(request.bytes);
  const worker = new Worker(new URL("./extraction-worker.ts", import.meta.url), {
    workerData: { ...request, bytes },
    transferList: [bytes.buffer as ArrayBuffer],
    resourceLimits: {
      maxOldGenerationSizeMb: options.heapMb,
      maxYoungGenerationSizeMb: WORKER_YOUNG_GENERATION_MB,
    },
  });
  return new Promise<WorkerOutcome>((resolve, reject) => {
    let settled = false;
    const finish = (outcome: WorkerOutcome | { abort: unknown }): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      options.signal.removeEventListener("abort", onAbort);
      void worker.terminate();
      if ("abort" in outcome) reject(outcome.abort);
      else resolve(outcome);
    };
    const onAbort = (): void => finish({ abort: options.signal.reason });
    const timer = setTimeout(
      () =>
        finish({ ok: false, message: `the extraction took longer than ${options.timeoutMs} ms` }),
      options.timeoutMs,
    );
    options.signal.addEventListener("abort", onAbort, { once: true });
    worker.once("message", (reply: WorkerReply) => finish(reply));
    worker.once("error", (error: Error & { code?: string }) =>
      finish({
        ok: false,
        message:
          error.code === "ERR_WORKER_OUT_OF_MEMORY"
            ? `the document needs more than ${options.heapMb} MiB to extract`
            : error.message,
      }),
    );
    worker.once("exit", (code) =>
      finish({ ok: false, message: `the extraction worker exited (${code}) without a result` }),
    );
  });
}
