import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { Writable } from "node:stream";
import { SpanKind } from "@opentelemetry/api";
import { W3CTraceContextPropagator } from "@opentelemetry/core";
import {
  InMemorySpanExporter,
  SimpleSpanProcessor,
  TracerProvider,
} from "@opentelemetry/sdk-trace";
import pino from "pino";
import { afterAll, beforeAll, expect, test } from "vitest";
import { type MessageContext, RunConsumer } from "../../../agent-host/runs/queue/run-consumer.ts";
import { createSqsWorkQueue } from "../../../agent-host/runs/queue/sqs-work-queue.ts";
import { DEFAULT_RUN_WORKER_LIMITS } from "../../../agent-host/runs/run-limits.ts";
import type { QueueMessage } from "../../../shared/contracts/queue-message.ts";
import type { Tracing } from "../../../shared/telemetry/tracing.ts";
import { buildZip } from "../skills/archive-builder.ts";
import {
  ALICE,
  type FunctionsHarness,
  startFunctionsHarness,
} from "./support/functions-harness.ts";

// Issue 15 / docs/decisions/0054: a data-plane call functions/ makes for an API request
// carries that request's X-Request-Id (the data plane's log lines name it) and its W3C
// trace context (the data plane's SERVER span is a child of the API's request span). A
// refresh queued for an agent-host carries both as message attributes (decision 0069).

let exporter: InMemorySpanExporter;
let provider: TracerProvider;
let h: FunctionsHarness;
const dataPlaneLines: Record<string, unknown>[] = [];

const tracing = (name: string): Tracing => ({
  tracer: provider.getTracer(name),
  propagator: new W3CTraceContextPropagator(),
});

/** A log stream whose JSON lines land in `lines`. */
function linesInto(lines: Record<string, unknown>[]): Writable {
  return new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString("utf8").split("\n").filter(Boolean)) {
        lines.push(JSON.parse(line) as Record<string, unknown>);
      }
      done();
    },
  });
}

beforeAll(async () => {
  exporter = new InMemorySpanExporter();
  provider = new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter })] });
  h = await startFunctionsHarness({
    tracing: tracing("functions"),
    dataPlane: {
      logger: pino({ level: "info" }, linesInto(dataPlaneLines)),
      tracing: tracing("data-plane"),
      skills: true,
    },
  });
});
afterAll(async () => {
  await h?.close();
  await provider?.shutdown();
});

test("a linked project's directory check reaches the data plane with the request's id and trace", async () => {
  mkdirSync(join(h.dataRoot, "users", ALICE, "workspace", "code", "traced"), { recursive: true });
  const requestId = `req-${crypto.randomUUID()}`;
  const res = await h.call("POST", "/v1/projects", {
    body: { name: "Traced", workdir_path: "code/traced" },
    headers: { "X-Request-Id": requestId },
  });
  expect(res.status).toBe(201);
  expect(res.headers.get("X-Request-Id")).toBe(requestId);

  // The data plane's request line (and every line of that request) names the caller's id.
  const checkLines = dataPlaneLines.filter((l) => l.route === "/internal/v1/workdirs/check");
  expect(checkLines).toHaveLength(1);
  expect(checkLines[0]).toMatchObject({ request_id: requestId, status: 200 });

  const spans = exporter.getFinishedSpans();
  const api = spans.find((s) => s.kind === SpanKind.SERVER && s.name === "POST /v1/projects");
  const dataPlane = spans.find(
    (s) => s.kind === SpanKind.SERVER && s.name === "POST /internal/v1/workdirs/check",
  );
  expect(api).toBeDefined();
  expect(dataPlane?.spanContext().traceId).toBe(api?.spanContext().traceId);
  expect(dataPlane?.parentSpanContext?.spanId).toBe(api?.spanContext().spanId);
});

/** Uploads a one-file skill archive and imports it as `slug` (POST /v1/admin/skills). */
async function importSkill(
  slug: string,
  description: string,
  headers: Record<string, string> = {},
): Promise<Response> {
  const archive = buildZip([
    { name: "SKILL.md", data: `---\nname: ${slug}\ndescription: ${description}\n---\n` },
  ]);
  const upload = await h.call("POST", "/v1/admin/skills/uploads", {
    admin: true,
    body: { size: archive.length },
  });
  expect(upload.status).toBe(201);
  const target = (await upload.json()) as {
    upload_id: string;
    upload_url: string;
    headers: Record<string, string>;
  };
  const put = await fetch(target.upload_url, {
    method: "PUT",
    headers: target.headers,
    body: archive,
  });
  expect(put.status).toBe(200);
  return h.call("POST", "/v1/admin/skills", {
    admin: true,
    body: { slug, upload_id: target.upload_id },
    headers,
  });
}

/** The data plane's request lines of `route`. */
function linesOf(route: string): Record<string, unknown>[] {
  return dataPlaneLines.filter((l) => l.msg === "request" && l.route === route);
}

/** The data plane's SERVER span of `route` is a child of the API's SERVER span `apiName`. */
function expectChildSpan(apiName: string, route: string): void {
  const spans = exporter.getFinishedSpans();
  const api = spans.filter((s) => s.kind === SpanKind.SERVER && s.name === apiName);
  const dataPlane = spans.filter((s) => s.kind === SpanKind.SERVER && s.name === `POST ${route}`);
  expect(api).toHaveLength(1);
  expect(dataPlane).toHaveLength(1);
  expect(dataPlane[0]?.spanContext().traceId).toBe(api[0]?.spanContext().traceId);
  expect(dataPlane[0]?.parentSpanContext?.spanId).toBe(api[0]?.spanContext().spanId);
}

test("the skills calls (personal listing, refresh, import) carry the request's id and trace", async () => {
  const before = dataPlaneLines.length;
  exporter.reset();

  // GET /v1/skills lists the caller's personal skills on the data plane.
  const listId = `req-${crypto.randomUUID()}`;
  const listed = await h.call("GET", "/v1/skills", { headers: { "X-Request-Id": listId } });
  expect(listed.status).toBe(200);
  expect(linesOf("/internal/v1/skills/personal")).toEqual([
    expect.objectContaining({ request_id: listId, status: 200 }),
  ]);
  expectChildSpan("GET /v1/skills", "/internal/v1/skills/personal");

  // A grant refreshes the user's projection at once.
  const grantId = `req-${crypto.randomUUID()}`;
  const granted = await h.call("PUT", `/v1/admin/skills/hello/grants/${ALICE}`, {
    admin: true,
    headers: { "X-Request-Id": grantId },
  });
  expect(granted.status).toBe(200);
  expect(await granted.json()).toMatchObject({ projection: "refreshed" });
  expect(linesOf("/internal/v1/skills/refresh")).toEqual([
    expect.objectContaining({ request_id: grantId, status: 200 }),
  ]);
  expectChildSpan("PUT /v1/admin/skills/{slug}/grants/{uid}", "/internal/v1/skills/refresh");

  // An import: the archive is uploaded to the bucket, then the agent-host imports it.
  // No X-Request-Id from the caller: the API's own id (echoed to the caller) travels on.
  const imported = await importSkill("traced", "Traced");
  expect(imported.status).toBe(201);
  const importId = imported.headers.get("X-Request-Id");
  expect(importId).toMatch(/^[0-9a-f-]{36}$/);
  expect(linesOf("/internal/v1/skills/import")).toEqual([
    expect.objectContaining({ request_id: importId, status: 200 }),
  ]);
  expectChildSpan("POST /v1/admin/skills", "/internal/v1/skills/import");

  // Every data-plane line of these calls names one of the three requests, none a new id.
  const skillLines = dataPlaneLines
    .slice(before)
    .filter((l) => String(l.route ?? "").startsWith("/internal/v1/skills/"));
  expect(skillLines.map((l) => l.request_id).sort()).toEqual([listId, grantId, importId].sort());
});

test("the usage read carries the request's id and trace", async () => {
  exporter.reset();
  const requestId = `req-${crypto.randomUUID()}`;
  const res = await h.call("GET", "/v1/usage", { headers: { "X-Request-Id": requestId } });
  expect(res.status).toBe(200);
  expect(linesOf("/internal/v1/usage")).toEqual([
    expect.objectContaining({ request_id: requestId, status: 200 }),
  ]);
  expectChildSpan("GET /v1/usage", "/internal/v1/usage");
});

test("a queued skills.refresh carries the request's id and trace to the agent-host's consumer", async () => {
  // alice holds `traced`: an update of it fans a refresh out to her through the queue.
  const granted = await h.call("PUT", `/v1/admin/skills/traced/grants/${ALICE}`, { admin: true });
  expect(granted.status).toBe(200);
  exporter.reset();
  const requestId = `req-${crypto.randomUUID()}`;
  const updated = await importSkill("traced", "Traced, updated", { "X-Request-Id": requestId });
  expect(updated.status).toBe(200);
  expect(await updated.json()).toMatchObject({ status: "updated", refreshes_queued: 1 });
  const api = exporter
    .getFinishedSpans()
    .filter((s) => s.kind === SpanKind.SERVER && s.name === "POST /v1/admin/skills");
  expect(api).toHaveLength(1);

  // The agent-host's consumer (the real one, on the real queue) receives it.
  const consumerLines: Record<string, unknown>[] = [];
  const handled = Promise.withResolvers<{ message: QueueMessage; context: MessageContext }>();
  const consumer = new RunConsumer({
    queue: createSqsWorkQueue({ sqs: h.sqs, queueUrl: h.queueUrl }),
    logger: pino({ level: "info" }, linesInto(consumerLines)),
    tracing: tracing("agent-host"),
    limits: { ...DEFAULT_RUN_WORKER_LIMITS, receiveWaitSeconds: 1 },
    handle: async (message, context) => {
      handled.resolve({ message, context });
      // Failing makes the consumer log a line of this delivery (it then stays for a retry).
      throw new Error("not refreshed in this test");
    },
  });
  consumer.start();
  const { message, context } = await handled.promise;
  await consumer.stopReceiving();
  await Promise.all(consumer.inflight());

  expect(message).toEqual({ type: "skills.refresh", uid: ALICE });
  expect(context.requestId).toBe(requestId);
  expect(consumerLines).toEqual([
    expect.objectContaining({ msg: "message handler failed", request_id: requestId }),
  ]);
  // Its CONSUMER span continues the request's trace, a child of the API's request span.
  const consumed = exporter.getFinishedSpans().filter((s) => s.kind === SpanKind.CONSUMER);
  expect(consumed).toHaveLength(1);
  expect(consumed[0]?.spanContext().traceId).toBe(api[0]?.spanContext().traceId);
  expect(consumed[0]?.parentSpanContext?.spanId).toBe(api[0]?.spanContext().spanId);
});
