import type { Logger } from "pino";
import { sleepRejectOnAbort } from "../../../shared/async/sleep-reject-on-abort.ts";
import { parseQueueMessage, type QueueMessage } from "../../../shared/contracts/queue-message.ts";
import type { ErrorCode } from "../../../shared/errors/error-catalogue.ts";
import { queueDisposition } from "../../../shared/errors/queue-disposition.ts";
import { isWorkcellError } from "../../../shared/errors/workcell-error.ts";
import {
  extractTrace,
  inSpan,
  noTracing,
  SpanKind,
  type TraceContext,
  type Tracing,
} from "../../../shared/telemetry/tracing.ts";
import { MAX_MESSAGES_PER_RECEIVE, type RunWorkerLimits } from "../run-limits.ts";
import { receiveBackoffMs } from "./receive-backoff.ts";
import type { ReceivedMessage, WorkQueue } from "./work-queue.ts";

/** What a handler can do with its message besides finishing. */
export interface MessageContext {
  /**
   * Deletes the message now (idempotent). For work whose fate moves elsewhere before it
   * ends: a claimed run lives in Postgres, so its message goes right after the claim.
   */
  ack(): Promise<void>;
  /** Makes the message visible again at once (visibility 0), for another consumer. */
  release(): Promise<void>;
  /** Aborts when the consumer stops: work not yet started should `release()`. */
  readonly stopping: AbortSignal;
  /** The CONSUMER span of this delivery, a child of the producer's (the queue hop). */
  readonly trace: TraceContext;
  /** The API request the message was sent for, when it names one (`skills.refresh`). */
  readonly requestId?: string;
}

/**
 * Handles one valid message. Resolving deletes it (if not acked already). Rejecting
 * decides by `queueDisposition` of the error's catalogue code (non-Workcell errors count
 * as `internal`): `retry` leaves it to reappear after its visibility timeout (the queue's
 * redrive policy dead-letters it after its maximum receive count), `dead_letter` moves it
 * aside at once.
 */
export type MessageHandler = (message: QueueMessage, context: MessageContext) => Promise<void>;

export interface RunConsumerDeps {
  readonly queue: WorkQueue;
  readonly handle: MessageHandler;
  readonly logger: Logger;
  /** Each delivery is a CONSUMER span continuing its message's trace; default off. */
  readonly tracing?: Tracing;
  readonly limits: Pick<
    RunWorkerLimits,
    | "concurrency"
    | "receiveWaitSeconds"
    | "visibilityTimeoutSeconds"
    | "queueCallTimeoutMs"
    | "receiveBackoffMinMs"
    | "receiveBackoffMaxMs"
  >;
}

/**
 * Long-polls the queue with at most `concurrency` messages in hand: it asks only for as
 * many messages as it has free slots, so nothing waits unclaimed behind a busy slot. A
 * failing receive backs off (exponential, jitter) instead of spinning. `stop()` ends the
 * polling at once (an in-flight long poll is aborted) and lets handlers finish; a message
 * received after stop began is released (visibility 0) for another node.
 */
export class RunConsumer {
  readonly #deps: RunConsumerDeps;
  readonly #stopping = new AbortController();
  readonly #inflight = new Set<Promise<void>>();
  #loop: Promise<void> | undefined;
  #slotFreed: (() => void) | undefined;

  constructor(deps: RunConsumerDeps) {
    this.#deps = deps;
  }

  start(): void {
    this.#loop ??= this.#poll();
  }

  /** Stops receiving; resolves when the poll loop has exited (handlers may still run). */
  async stopReceiving(): Promise<void> {
    this.#stopping.abort();
    this.#slotFreed?.();
    await this.#loop;
  }

  /** Handlers still running. */
  inflight(): Promise<void>[] {
    return [...this.#inflight];
  }

  async #poll(): Promise<void> {
    const { limits, logger } = this.#deps;
    const stopping = this.#stopping.signal;
    let failures = 0;
    while (!stopping.aborted) {
      const free = limits.concurrency - this.#inflight.size;
      if (free <= 0) {
        await new Promise<void>((resolve) => {
          this.#slotFreed = resolve;
        });
        continue;
      }
      let messages: readonly ReceivedMessage[];
      try {
        messages = await this.#deps.queue.receive(
          {
            max: Math.min(free, MAX_MESSAGES_PER_RECEIVE),
            waitSeconds: limits.receiveWaitSeconds,
            visibilityTimeoutSeconds: limits.visibilityTimeoutSeconds,
          },
          // The long poll answers within its wait; one that does not (a stalled
          // connection) is abandoned after the wait plus one call's bound.
          AbortSignal.any([
            stopping,
            AbortSignal.timeout(limits.receiveWaitSeconds * 1000 + limits.queueCallTimeoutMs),
          ]),
        );
        failures = 0;
      } catch (error) {
        if (stopping.aborted) break;
        failures++;
        const delayMs = receiveBackoffMs(
          failures,
          limits.receiveBackoffMinMs,
          limits.receiveBackoffMaxMs,
        );
        logger.warn({ err: error, failures, delay_ms: delayMs }, "queue receive failed");
        await sleepRejectOnAbort(delayMs, stopping).catch(() => {});
        continue;
      }
      for (const message of messages) this.#track(this.#process(message));
    }
  }

  #track(work: Promise<void>): void {
    this.#inflight.add(work);
    void work.finally(() => {
      this.#inflight.delete(work);
      const wake = this.#slotFreed;
      this.#slotFreed = undefined;
      wake?.();
    });
  }

  async #process(message: ReceivedMessage): Promise<void> {
    const tracing = this.#deps.tracing ?? noTracing();
    await inSpan(
      tracing,
      "run.dispatch process",
      {
        parent: extractTrace(tracing, message.traceCarrier),
        kind: SpanKind.CONSUMER,
        attributes: { "messaging.system": "aws_sqs", "messaging.operation.type": "process" },
      },
      (span, trace) => {
        if (message.messageId !== undefined)
          span.setAttribute("messaging.message.id", message.messageId);
        return this.#processIn(message, trace);
      },
    );
  }

  async #processIn(message: ReceivedMessage, trace: TraceContext): Promise<void> {
    const { queue } = this.#deps;
    const log = this.#deps.logger.child({
      message_id: message.messageId,
      ...(message.requestId === undefined ? {} : { request_id: message.requestId }),
    });
    let acked = false;
    const context: MessageContext = {
      ack: async () => {
        if (acked) return;
        acked = true;
        await queue.ack(message, this.#callSignal());
      },
      release: async () => {
        if (acked) return;
        acked = true;
        await queue.release(message, this.#callSignal());
      },
      stopping: this.#stopping.signal,
      trace,
      ...(message.requestId === undefined ? {} : { requestId: message.requestId }),
    };
    const parsed = parseQueueMessage(message.body);
    try {
      if (!parsed.ok) {
        log.warn({ err: parsed.error }, "queue message is not one of ours");
        await this.#dispose(message, parsed.error.code, log);
        return;
      }
      try {
        await this.#deps.handle(parsed.value, context);
      } catch (error) {
        if (acked) {
          log.error({ err: error }, "message handler failed after its message was deleted");
          return;
        }
        const code: ErrorCode = isWorkcellError(error) ? error.code : "internal";
        log.warn({ err: error, code }, "message handler failed");
        acked = true;
        await this.#dispose(message, code, log);
        return;
      }
      await context.ack();
    } catch (error) {
      // Deleting or moving failed: the message reappears and is handled again, which is
      // harmless (claims are conditional, refreshes idempotent).
      log.warn({ err: error }, "queue bookkeeping failed");
    }
  }

  async #dispose(message: ReceivedMessage, code: ErrorCode, log: Logger): Promise<void> {
    if (queueDisposition(code) === "retry") return; // reappears after its visibility timeout
    const result = await this.#deps.queue.deadLetter(message, code, this.#callSignal());
    if (result === "dropped") {
      log.error({ code }, "dropped a message that can never succeed (no dead-letter queue set)");
    }
  }

  #callSignal(): AbortSignal {
    return AbortSignal.timeout(this.#deps.limits.queueCallTimeoutMs);
  }
}
