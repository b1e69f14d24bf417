import { randomUUID } from "node:crypto";
import { ReceiveMessageCommand, type SQSClient } from "@aws-sdk/client-sqs";
import { trace } from "@opentelemetry/api";
import { W3CTraceContextPropagator } from "@opentelemetry/core";
import {
  InMemorySpanExporter,
  SimpleSpanProcessor,
  TracerProvider,
} from "@opentelemetry/sdk-trace";
import { afterEach, beforeEach, expect, it } from "vitest";
import { createSqsWorkQueue } from "../../../agent-host/runs/queue/sqs-work-queue.ts";
import { createBatchingRunQueue } from "../../../functions/queue/batching-run-queue.ts";
import { createSqsRunQueue } from "../../../functions/queue/sqs-run-queue.ts";
import { extractTrace, ROOT_CONTEXT, type Tracing } from "../../../shared/telemetry/tracing.ts";
import { freshQueue, sqsClient } from "../../support/aws.ts";

// The queue hop of a run's trace (issue 15): the W3C trace context travels in each SQS
// message's attributes, also when several submissions share one SendMessageBatch.

let sqs: SQSClient;
let queueUrl: string;
let exporter: InMemorySpanExporter;
let provider: TracerProvider;
let tracing: Tracing;

beforeEach(async () => {
  sqs = sqsClient();
  queueUrl = await freshQueue(sqs, "traced");
  exporter = new InMemorySpanExporter();
  provider = new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter })] });
  tracing = { tracer: provider.getTracer("test"), propagator: new W3CTraceContextPropagator() };
});
afterEach(async () => {
  await provider.shutdown();
  sqs.destroy();
});

/** Every message on the queue, received the way the agent-host's consumer receives them. */
async function receiveAll(count: number) {
  const queue = createSqsWorkQueue({ sqs, queueUrl });
  const got: Awaited<ReturnType<typeof queue.receive>>[number][] = [];
  while (got.length < count) {
    const batch = await queue.receive(
      { max: 10, waitSeconds: 5, visibilityTimeoutSeconds: 60 },
      AbortSignal.timeout(10_000),
    );
    if (batch.length === 0) throw new Error(`only ${got.length} of ${count} messages arrived`);
    got.push(...batch);
  }
  return got;
}

it("each run of a batched dispatch carries its own request's trace context to the consumer", async () => {
  const inner = createSqsRunQueue({ sqs, queueUrl, tracing });
  const batches: number[] = [];
  const queue = createBatchingRunQueue(
    {
      ...inner,
      dispatchRuns: (ids, signal, traces) => {
        batches.push(ids.length);
        return inner.dispatchRuns(ids, signal, traces);
      },
    },
    { lingerMs: 20 },
  );
  // Three concurrent submissions, each its own request span (its own trace).
  const requests = [0, 1, 2].map(() => {
    const span = tracing.tracer.startSpan("POST /v1/runs");
    return { runId: randomUUID(), span, context: trace.setSpan(ROOT_CONTEXT, span) };
  });
  await Promise.all(
    requests.map((r) => queue.dispatchRun(r.runId, AbortSignal.timeout(10_000), r.context)),
  );
  for (const r of requests) r.span.end();
  expect(batches).toEqual([3]);

  const publishes = exporter.getFinishedSpans().filter((s) => s.name === "run.dispatch publish");
  expect(publishes).toHaveLength(3);
  const messages = await receiveAll(3);
  for (const r of requests) {
    const requestSpan = r.span.spanContext();
    const publish = publishes.find((s) => s.attributes["workcell.run_id"] === r.runId);
    // The hop is a child of its own request, in its own trace: batching mixes no traces.
    expect(publish?.spanContext().traceId).toBe(requestSpan.traceId);
    expect(publish?.parentSpanContext?.spanId).toBe(requestSpan.spanId);
    const message = messages.find((m) => m.body.includes(r.runId));
    const carried = trace.getSpanContext(extractTrace(tracing, message?.traceCarrier));
    expect(carried?.traceId).toBe(requestSpan.traceId);
    expect(carried?.spanId).toBe(publish?.spanContext().spanId);
  }
});

it("tracing off puts no trace attributes on the message and records nothing", async () => {
  const queue = createSqsRunQueue({ sqs, queueUrl });
  const span = tracing.tracer.startSpan("POST /v1/runs");
  await queue.dispatchRun(
    randomUUID(),
    AbortSignal.timeout(10_000),
    trace.setSpan(ROOT_CONTEXT, span),
  );
  span.end();
  const out = await sqs.send(
    new ReceiveMessageCommand({
      QueueUrl: queueUrl,
      MessageAttributeNames: ["All"],
      WaitTimeSeconds: 5,
    }),
  );
  expect(out.Messages).toHaveLength(1);
  expect(out.Messages?.[0]?.MessageAttributes ?? {}).toEqual({});
  // Only the test's own span: the queue made none with the off tracer.
  expect(exporter.getFinishedSpans().map((s) => s.name)).toEqual(["POST /v1/runs"]);
});
