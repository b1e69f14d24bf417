import type { ErrorCode } from "../../../shared/errors/error-catalogue.ts";

/** One received message; `receipt` names this delivery for ack / release / dead-letter. */
export interface ReceivedMessage {
  readonly messageId: string | undefined;
  readonly body: string;
  readonly receipt: string;
  /** The producer's W3C trace context (traceparent / tracestate attributes), if any. */
  readonly traceCarrier?: Readonly<Record<string, string>>;
  /** The API request a `skills.refresh` was sent for (its `request_id` attribute), if any. */
  readonly requestId?: string;
}

export interface ReceiveRequest {
  readonly max: number;
  /** Long poll: how long to wait for a first message. */
  readonly waitSeconds: number;
  /** How long each received message stays hidden while it is handled. */
  readonly visibilityTimeoutSeconds: number;
}

/** What deadLetter did: moved aside to the dead-letter queue, or dropped (none is set). */
export type DeadLetterResult = "moved" | "dropped";

/**
 * The agent-host's side of the run queue: consume, ack, release, dead-letter, and send a
 * handed-back run again. SQS (sqs-work-queue.ts, fauxqs locally) is one implementation,
 * as RunQueue is on the control plane; the consumer knows nothing of the SDK. Every call
 * takes a signal and must settle when it aborts.
 */
export interface WorkQueue {
  /** Long-polls for at most `max` messages; each stays hidden while it is handled. */
  receive(request: ReceiveRequest, signal: AbortSignal): Promise<readonly ReceivedMessage[]>;
  /** Deletes the delivery: its work is done, or its fate lives elsewhere now. */
  ack(message: ReceivedMessage, signal: AbortSignal): Promise<void>;
  /** Makes it visible again at once, for another consumer. */
  release(message: ReceivedMessage, signal: AbortSignal): Promise<void>;
  /** Moves it aside (with the error code) and deletes it: it can never succeed. */
  deadLetter(
    message: ReceivedMessage,
    code: ErrorCode,
    signal: AbortSignal,
  ): Promise<DeadLetterResult>;
  /**
   * Puts a message on the queue, visible after `delaySeconds`, carrying `traceCarrier`
   * (W3C trace context) when given.
   */
  send(
    body: string,
    delaySeconds: number,
    signal: AbortSignal,
    traceCarrier?: Readonly<Record<string, string>>,
  ): Promise<void>;
}
