import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, expect, test } from "vitest";
import { createSqsWorkQueue } from "../../../agent-host/runs/queue/sqs-work-queue.ts";
import { mintDevToken } from "../../../infra/local/dev-token.ts";
import type { Run } from "../../../shared/contracts/run.ts";
import { sqsClient } from "../../support/aws.ts";
import { functionsEntryEnv } from "../../support/functions-entry-env.ts";
import { type OtlpCollector, startOtlpCollector } from "../../support/otlp-collector.ts";
import type { TestDatabase } from "../../support/postgres.ts";
import { functionUrlEvent, type LambdaHttpEvent } from "./support/lambda-events.ts";

// Issue 15, item 2 on Lambda (docs/decisions/0034): the real Lambda entry configured by
// OTEL_* continues the caller's trace and exports each request's spans before the
// invocation returns (the instance is frozen afterwards), with the SDK's real OTLP exporter
// to a collector in this test. The batch delay is an hour: only the per-request flush can
// have sent them. The scheduled sweeper entry is configured and flushed the same way
// (docs/decisions/0069).

type LambdaResult = { statusCode: number; headers: Record<string, string>; body: string };

const SECRET = "lambda-traces-secret-0123456789abcdef";
let database: TestDatabase;
let queueUrl: string;
let collector: OtlpCollector;
let handler: (event: LambdaHttpEvent) => Promise<LambdaResult>;
let sweep: () => Promise<{ ran: boolean; sent: number }>;
const saved = { ...process.env };

beforeAll(async () => {
  collector = await startOtlpCollector();
  let vars: Record<string, string>;
  ({ database, queueUrl, vars } = await functionsEntryEnv({
    devJwtSecret: SECRET,
    queuePrefix: "lambda-traces",
    logLevel: "silent",
  }));
  Object.assign(process.env, vars, {
    WORKCELL_LAMBDA_RESPONSE_MODE: "buffered",
    OTEL_TRACES_EXPORTER: "otlp",
    OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: collector.tracesUrl,
    OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
    OTEL_BSP_SCHEDULE_DELAY: "3600000",
  });
  ({ handler } = (await import("../../../functions/entry/lambda.ts")) as unknown as {
    handler: typeof handler;
  });
  ({ handler: sweep } = await import("../../../functions/entry/sweeper.ts"));
});
afterAll(async () => {
  process.env = saved;
  await collector?.close();
  await database?.drop();
});

/** POST /v1/runs through the Lambda entry as `uid`, with the caller's `traceparent`. */
async function submit(uid: string, traceparent: string, input: string): Promise<LambdaResult> {
  const token = await mintDevToken(SECRET, uid);
  return handler(
    functionUrlEvent({
      method: "POST",
      path: "/v1/runs",
      headers: {
        authorization: `Bearer ${token}`,
        "content-type": "application/json",
        traceparent,
      },
      body: JSON.stringify({ input }),
    }),
  );
}

test("a submission on Lambda is traced and its spans are exported before the invocation returns", async () => {
  const traceId = randomBytes(16).toString("hex");
  const callerSpanId = randomBytes(8).toString("hex");
  const res = await submit("lamb", `00-${traceId}-${callerSpanId}-01`, "echo traced on lambda");
  expect(res.statusCode).toBe(202);
  const { run } = JSON.parse(res.body) as { run: Run };

  // Already at the collector: nothing is waited for after the handler returned.
  const mine = collector.spans().filter((s) => s.traceId === traceId);
  const request = mine.filter((s) => s.name === "POST /v1/runs");
  const publish = mine.filter((s) => s.name === "run.dispatch publish");
  expect(request).toHaveLength(1);
  expect(publish).toHaveLength(1);
  expect(request[0]).toMatchObject({
    service: "workcell-functions",
    kind: 2,
    parentSpanId: callerSpanId,
  });
  expect(publish[0]).toMatchObject({ kind: 4, parentSpanId: request[0]?.spanId });
  expect(publish[0]?.attributes["workcell.run_id"]).toBe(run.run_id);
});

test("the Lambda sweeper's re-send continues the run's stored trace and is exported before it returns", async () => {
  const traceId = randomBytes(16).toString("hex");
  const res = await submit(
    "swept",
    `00-${traceId}-${randomBytes(8).toString("hex")}-01`,
    "echo lost on lambda",
  );
  expect(res.statusCode).toBe(202);
  const { run } = JSON.parse(res.body) as { run: Run };
  const request = collector
    .spans()
    .filter((s) => s.traceId === traceId && s.name === "POST /v1/runs");
  expect(request).toHaveLength(1);
  // The first message is lost (received and dropped); the run is due for a re-send.
  const queue = createSqsWorkQueue({ sqs: sqsClient(), queueUrl });
  const first = await queue.receive(
    { max: 10, waitSeconds: 5, visibilityTimeoutSeconds: 60 },
    AbortSignal.timeout(10_000),
  );
  for (const m of first) await queue.ack(m, AbortSignal.timeout(10_000));
  expect(first.map((m) => m.body).join()).toContain(run.run_id);
  await database.sql`update agent_runs set dispatched_at = now() - interval '5 minutes'
    where run_id = ${run.run_id}`;

  expect(await sweep()).toMatchObject({ ran: true, sent: 1 });

  // Already at the collector (the batch delay is an hour): a publish span in the request's
  // trace, its child, and the re-sent message names that span.
  const publishes = collector
    .spans()
    .filter((s) => s.traceId === traceId && s.name === "run.dispatch publish");
  expect(publishes).toHaveLength(2);
  // Both children of the request: the submission's publish and the sweeper's.
  expect(publishes.map((s) => s.parentSpanId)).toEqual([request[0]?.spanId, request[0]?.spanId]);
  const [message] = await queue.receive(
    { max: 1, waitSeconds: 5, visibilityTimeoutSeconds: 60 },
    AbortSignal.timeout(10_000),
  );
  expect(message?.body).toContain(run.run_id);
  const carried = message?.traceCarrier?.traceparent?.split("-");
  expect(carried?.[1]).toBe(traceId);
  const sweptSpan = publishes.find((s) => s.spanId === carried?.[2]);
  expect(sweptSpan).toMatchObject({ kind: 4, service: "workcell-functions" });
  // Not the submission's publish: the first message named that one.
  expect(carried?.[2]).not.toBe(first[0]?.traceCarrier?.traceparent?.split("-")[2]);
  expect(sweptSpan?.attributes["workcell.run_id"]).toBe(run.run_id);
});
