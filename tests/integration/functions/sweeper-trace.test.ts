import { SpanKind, trace } from "@opentelemetry/api";
import { W3CTraceContextPropagator } from "@opentelemetry/core";
import {
  InMemorySpanExporter,
  SimpleSpanProcessor,
  TracerProvider,
} from "@opentelemetry/sdk-trace";
import pino from "pino";
import { afterAll, beforeAll, expect, test } from "vitest";
import { createSqsWorkQueue } from "../../../agent-host/runs/queue/sqs-work-queue.ts";
import { sweepPendingRuns } from "../../../functions/runs/dispatch-sweeper.ts";
import type { Run } from "../../../shared/contracts/run.ts";
import { extractTrace, type Tracing } from "../../../shared/telemetry/tracing.ts";
import {
  type FunctionsHarness,
  jsonOf,
  startFunctionsHarness,
} from "./support/functions-harness.ts";

// Issue 15 / docs/decisions/0054: the sweeper's re-send of a run whose message was lost
// continues the trace of the request that submitted it (the context stored with the run
// at submission), instead of starting a new trace.

let exporter: InMemorySpanExporter;
let provider: TracerProvider;
let tracing: Tracing;
let h: FunctionsHarness;

beforeAll(async () => {
  exporter = new InMemorySpanExporter();
  provider = new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter })] });
  tracing = { tracer: provider.getTracer("test"), propagator: new W3CTraceContextPropagator() };
  h = await startFunctionsHarness({ tracing });
});
afterAll(async () => {
  await h?.close();
  await provider?.shutdown();
});

test("a swept run's message carries the submitting request's trace, through a new publish span", async () => {
  const res = await h.call("POST", "/v1/runs", { body: { input: "lost message" } });
  expect(res.status).toBe(202);
  const run = (await jsonOf<{ run: Run }>(res)).run;
  expect(await h.drainDispatches()).toEqual([run.run_id]);
  const request = exporter
    .getFinishedSpans()
    .find((s) => s.kind === SpanKind.SERVER && s.name.includes("/v1/runs"));
  expect(request).toBeDefined();
  const requestContext = request?.spanContext();
  const [stored] = await h.database.sql<{ trace_context: Record<string, string> | null }[]>`
    select trace_context from agent_runs where run_id = ${run.run_id}`;
  expect(stored?.trace_context?.traceparent).toContain(requestContext?.traceId);

  // The message is lost: the sweeper sends the run again.
  await h.database.sql`update agent_runs set dispatched_at = now() - interval '5 minutes'
    where run_id = ${run.run_id}`;
  exporter.reset();
  const swept = await sweepPendingRuns(
    { db: h.db, runQueue: h.deps.runQueue, logger: pino({ level: "silent" }), tracing },
    AbortSignal.timeout(10_000),
  );
  expect(swept).toEqual({ ran: true, sent: [run.run_id], failed: [] });

  const publish = exporter.getFinishedSpans().find((s) => s.name === "run.dispatch publish");
  expect(publish?.spanContext().traceId).toBe(requestContext?.traceId);
  expect(publish?.parentSpanContext?.spanId).toBe(requestContext?.spanId);
  const [message] = await createSqsWorkQueue({ sqs: h.sqs, queueUrl: h.queueUrl }).receive(
    { max: 1, waitSeconds: 5, visibilityTimeoutSeconds: 60 },
    AbortSignal.timeout(10_000),
  );
  expect(message?.body).toContain(run.run_id);
  const carried = trace.getSpanContext(extractTrace(tracing, message?.traceCarrier));
  expect(carried?.traceId).toBe(requestContext?.traceId);
  expect(carried?.spanId).toBe(publish?.spanContext().spanId);
});
