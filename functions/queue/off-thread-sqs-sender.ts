import { Worker } from "node:worker_threads";
import type { SendMessageBatchCommandInput } from "@aws-sdk/client-sqs";
import type { AwsCredentials, AwsEnv } from "../../shared/aws/create-aws-clients.ts";
import type { SqsBatchResult, SqsBatchSend } from "./sqs-batch-send.ts";

/** What the sender thread is started with (structured-cloned into it). */
export type SenderThreadData = {
  readonly aws: AwsEnv;
  readonly credentials?: AwsCredentials;
};

/** Main thread → sender thread. */
export type SenderRequest =
  | { readonly type: "send"; readonly id: number; readonly input: SendMessageBatchCommandInput }
  | { readonly type: "abort"; readonly id: number };

/** Sender thread → main thread: one per send, its answer or its error. */
export type SenderReply =
  | { readonly id: number; readonly ok: true; readonly result: SqsBatchResult }
  | { readonly id: number; readonly ok: false; readonly error: SenderError };

export type SenderError = { readonly name: string; readonly message: string };

export interface OffThreadSqsSender {
  /** One SendMessageBatch, made by the sender thread's own SQS client. */
  readonly send: SqsBatchSend;
  /** Stops the thread; sends still waiting for it are refused (their runs stay for the sweeper). */
  close(): Promise<void>;
}

type Thread = {
  readonly worker: Worker;
  readonly waiting: Map<number, (reply: SenderReply) => void>;
};

/**
 * SendMessageBatch on a thread of its own, for a long-lived runtime (the Node entry,
 * local mode): the AWS SDK's serializing, signing, HTTP and parsing cost ≈ 0.3 ms of CPU
 * per batch here, and on the request thread that is time no request is served. Only the
 * call moves: entries, spans and metrics stay with the run queue on the caller's thread,
 * and a send resolves only with SQS's answer, exactly as the in-thread one (decision
 * 0090). The thread has its own client with the deployable's settings (awsClientConfig),
 * credentials from the same default chain (the thread inherits the environment) unless
 * given.
 *
 * Faults end: a caller's abort is answered at once and cancels the thread's call; if the
 * thread dies, every send it held is refused (the submitter then leaves the run to the
 * sweeper) and the next send starts a new thread. The thread keeps the process alive only
 * while a send is in flight, so an idle sender never blocks a shutdown.
 */
export function createOffThreadSqsSender(data: SenderThreadData): OffThreadSqsSender {
  let thread: Thread | undefined;
  let nextId = 0;
  let closed = false;

  const start = (): Thread => {
    const worker = new Worker(new URL("./sqs-sender-thread.ts", import.meta.url), {
      workerData: data,
    });
    worker.unref();
    const started: Thread = { worker, waiting: new Map() };
    worker.on("message", (reply: SenderReply) => {
      const settle = started.waiting.get(reply.id);
      started.waiting.delete(reply.id);
      if (started.waiting.size === 0) worker.unref();
      settle?.(reply);
    });
    // An uncaught error ends the thread (a module that failed to load, say); "exit"
    // follows and refuses what it held, naming the error.
    let failure = "";
    worker.on("error", (error: Error) => {
      failure = `: ${error.name}: ${error.message}`;
    });
    worker.on("exit", (code) => {
      if (thread === started) thread = undefined;
      const refusal: SenderReply = {
        id: -1,
        ok: false,
        error: {
          name: "SenderThreadExited",
          message: `the SQS sender thread exited (code ${code}${failure}) before SQS answered; the batch may or may not be on the queue`,
        },
      };
      for (const settle of started.waiting.values()) settle(refusal);
      started.waiting.clear();
    });
    return started;
  };

  return {
    send(input, signal) {
      if (signal.aborted) return Promise.reject(signal.reason);
      if (closed) return Promise.reject(new Error("the SQS sender is closed"));
      thread ??= start();
      const current = thread;
      const id = nextId++;
      return new Promise<SqsBatchResult>((resolve, reject) => {
        const onAbort = () => {
          if (!current.waiting.delete(id)) return;
          if (current.waiting.size === 0) current.worker.unref();
          current.worker.postMessage({ type: "abort", id } satisfies SenderRequest);
          reject(signal.reason);
        };
        signal.addEventListener("abort", onAbort, { once: true });
        current.waiting.set(id, (reply) => {
          signal.removeEventListener("abort", onAbort);
          if (reply.ok) resolve(reply.result);
          else reject(Object.assign(new Error(reply.error.message), { name: reply.error.name }));
        });
        current.worker.ref();
        current.worker.postMessage({ type: "send", id, input } satisfies SenderRequest);
      });
    },
    async close() {
      closed = true;
      const current = thread;
      thread = undefined;
      await current?.worker.terminate();
    },
  };
}
