import {
  type MessageAttributeValue,
  SendMessageCommand,
  type SQSClient,
} from "@aws-sdk/client-sqs";
import { trace } from "@opentelemetry/api";
import { serializeQueueMessage } from "../../shared/contracts/queue-message.ts";
import { countSqsErrors } from "../../shared/metrics/count-sqs-errors.ts";
import type { WorkcellMetrics } from "../../shared/metrics/workcell-metrics.ts";
import { traceMessageAttributes } from "../../shared/telemetry/message-attributes.ts";
import {
  failSpan,
  injectTrace,
  noTracing,
  ROOT_CONTEXT,
  SpanKind,
  type TraceContext,
  type Tracing,
} from "../../shared/telemetry/tracing.ts";
import type { RunQueue } from "./run-queue.ts";
import { type SqsBatchSend, sendBatchWith } from "./sqs-batch-send.ts";

/** SQS accepts at most this many entries per SendMessageBatch. */
export const SQS_MAX_BATCH_ENTRIES = 10;

/** The run queue on SQS (a standard queue; its DLQ is configured by infra). */
export function createSqsRunQueue(p: {
  sqs: SQSClient;
  queueUrl: string;
  /** Each message is a PRODUCER span whose context travels in its message attributes. */
  tracing?: Tracing;
  /** Failed sends (whole calls, and entries a batch refused) count in workcell_sqs_errors_total. */
  metrics?: Pick<WorkcellMetrics, "sqsErrors">;
  /**
   * How a batch reaches SQS: by default `sqs` on this thread; the long-lived runtimes pass
   * their sender thread's (off-thread-sqs-sender.ts), so the SDK's work leaves the event
   * loop that serves requests.
   */
  sendBatch?: SqsBatchSend;
}): RunQueue {
  const tracing = p.tracing ?? noTracing();
  const sendBatch = p.sendBatch ?? sendBatchWith(p.sqs);
  return {
    async dispatchRun(runId, signal, parent) {
      const hop = publishSpan(tracing, runId, parent);
      try {
        await countSqsErrors(p.metrics, "send", signal, () =>
          p.sqs.send(
            new SendMessageCommand({
              QueueUrl: p.queueUrl,
              MessageBody: serializeQueueMessage({ type: "run.dispatch", run_id: runId }),
              ...hop.attributes,
            }),
            { abortSignal: signal },
          ),
        );
      } catch (error) {
        hop.end(error);
        throw error;
      }
      hop.end();
    },
    async dispatchRuns(runIds, signal, parents) {
      const sent: string[] = [];
      const failed: string[] = [];
      for (let start = 0; start < runIds.length; start += SQS_MAX_BATCH_ENTRIES) {
        const chunk = runIds.slice(start, start + SQS_MAX_BATCH_ENTRIES);
        // One span per message, not per batch: each run's trace gets its own queue hop.
        const hops = chunk.map((runId) => publishSpan(tracing, runId, parents?.get(runId)));
        try {
          const out = await countSqsErrors(p.metrics, "send", signal, () =>
            sendBatch(
              {
                QueueUrl: p.queueUrl,
                // Entry ids only need to be unique within the batch: the index is enough.
                Entries: chunk.map((runId, index) => ({
                  Id: String(index),
                  MessageBody: serializeQueueMessage({ type: "run.dispatch", run_id: runId }),
                  ...hops[index]?.attributes,
                })),
              },
              signal,
            ),
          );
          const ok = new Set((out.Successful ?? []).map((entry) => Number(entry.Id)));
          const refused = chunk.length - ok.size;
          if (refused > 0) p.metrics?.sqsErrors.inc({ operation: "send" }, refused);
          chunk.forEach((runId, index) => {
            (ok.has(index) ? sent : failed).push(runId);
            hops[index]?.end(ok.has(index) ? undefined : new Error("SQS refused the entry"));
          });
        } catch (error) {
          // The whole batch failed (queue unreachable): nothing of it is on the queue.
          failed.push(...chunk);
          for (const hop of hops) hop.end(error);
        }
      }
      return { sent, failed };
    },
  };
}

type PublishSpan = {
  readonly attributes: { MessageAttributes?: Record<string, MessageAttributeValue> };
  end(error?: unknown): void;
};

/** The queue hop of one run's trace: a PRODUCER span, its context in the message. */
function publishSpan(
  tracing: Tracing,
  runId: string,
  parent: TraceContext | undefined,
): PublishSpan {
  const context = parent ?? ROOT_CONTEXT;
  const span = tracing.tracer.startSpan(
    "run.dispatch publish",
    {
      kind: SpanKind.PRODUCER,
      attributes: {
        "messaging.system": "aws_sqs",
        "messaging.operation.type": "send",
        "workcell.run_id": runId,
      },
    },
    context,
  );
  const attributes = traceMessageAttributes(injectTrace(tracing, trace.setSpan(context, span)));
  return {
    attributes: attributes === undefined ? {} : { MessageAttributes: attributes },
    end(error) {
      if (error !== undefined) failSpan(span, error);
      span.end();
    },
  };
}
