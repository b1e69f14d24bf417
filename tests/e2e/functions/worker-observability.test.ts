import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, inject, test } from "vitest";
import { mintDevToken } from "../../../infra/local/dev-token.ts";
import type { Run } from "../../../shared/contracts/run.ts";
import { functionsEntryEnv } from "../../support/functions-entry-env.ts";
import { type OtlpCollector, startOtlpCollector } from "../../support/otlp-collector.ts";
import type { TestDatabase } from "../../support/postgres.ts";
import { type AgentHostProcess, startAgentHostProcess } from "./support/agent-host-process.ts";
import { runToEnd } from "./support/run-to-end.ts";
import type { ServerProcess } from "./support/server-process.ts";
import { expectDispatchTrace, oneSpan } from "./support/traced-run.ts";
import { startWranglerDev } from "./support/wrangler-dev.ts";

// Issue 15 on the Workers entry (docs/decisions/0078): its request log lines and its traces,
// under a real `wrangler dev` (workerd from npm) with a real agent-host process, exporting
// with the bundled OTLP exporter to a collector in this test. worker-entry.test.ts runs the
// Worker quiet (warn); this harness runs it, and wrangler, at info to read its lines.

const SECRET = "worker-observability-secret-0123456789";
const COLLECTOR_TOKEN = `collector-${randomBytes(12).toString("hex")}`;
const SERVICE = "workcell-worker-e2e";
const A = "workcell-agent-host";

type LogLine = Record<string, unknown> & { msg?: string };

let scratch: string;
let database: TestDatabase;
let vars: Record<string, string>;
let collector: OtlpCollector;
let agentHost: AgentHostProcess | undefined;
let worker: ServerProcess;

beforeAll(async () => {
  const image = inject("sandboxImage");
  if (!image) throw new Error(inject("dockerError") || "the sandbox image is missing");
  scratch = await mkdtemp(join(tmpdir(), "workcell-wrangler-obs-"));
  collector = await startOtlpCollector();
  ({ database, vars } = await functionsEntryEnv({
    devJwtSecret: SECRET,
    queuePrefix: "worker-obs",
    logLevel: "info",
  }));
  agentHost = await startAgentHostProcess({
    functionsVars: vars,
    image,
    nodePrefix: "worker-obs",
    env: {
      OTEL_TRACES_EXPORTER: "otlp",
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: collector.tracesUrl,
      OTEL_BSP_SCHEDULE_DELAY: "100",
    },
  });
  worker = await startWranglerDev({
    scratch,
    vars: {
      ...vars,
      DATA_PLANE_URL: agentHost.url,
      // The standard variables, as bindings: the base endpoint (…/v1/traces appended),
      // a secret header, a service name.
      OTEL_TRACES_EXPORTER: "otlp",
      OTEL_EXPORTER_OTLP_ENDPOINT: collector.tracesUrl.replace(/\/v1\/traces$/, ""),
      OTEL_EXPORTER_OTLP_HEADERS: `authorization=Bearer%20${COLLECTOR_TOKEN}`,
      OTEL_SERVICE_NAME: SERVICE,
    },
    logLevel: "info",
  });
}, 180_000);

afterAll(async () => {
  await worker?.stop();
  await agentHost?.stop();
  await collector?.close();
  await database?.drop();
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

/** The Worker's JSON log lines (wrangler's own lines and partial chunks skipped). */
function jsonLines(output: string): LogLine[] {
  return output
    .split("\n")
    .filter((line) => line.startsWith("{") && line.endsWith("}"))
    .map((line) => JSON.parse(line) as LogLine);
}

function requestLine(output: string, requestId: string): LogLine | undefined {
  return jsonLines(output).find((l) => l.msg === "request" && l.request_id === requestId);
}

function traceparent(traceId: string, spanId: string): string {
  return `00-${traceId}-${spanId}-01`;
}

describe("Cloudflare Workers observability (wrangler dev)", () => {
  test("one JSON `request` line per request, with the caller's X-Request-Id; no secret or bound value", async () => {
    const token = await mintDevToken(SECRET, "wanda");
    const title = `bound-title-${crypto.randomUUID()}`;
    const created = `wrk-created-${crypto.randomUUID()}`;
    const refused = `wrk-refused-${crypto.randomUUID()}`;
    const thread = await fetch(`${worker.url}/v1/threads`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${token}`,
        "content-type": "application/json",
        "X-Request-Id": created,
      },
      body: JSON.stringify({ title }),
    });
    expect(thread.status).toBe(201);
    expect(thread.headers.get("X-Request-Id")).toBe(created);
    const unknown = await fetch(`${worker.url}/v1/runs/${crypto.randomUUID()}`, {
      headers: { authorization: "Bearer not-a-token", "X-Request-Id": refused },
    });
    expect(unknown.status).toBe(401);

    const output = await worker.untilOutput(
      (out) => requestLine(out, created) !== undefined && requestLine(out, refused) !== undefined,
    );
    expect(requestLine(output, created)).toMatchObject({
      level: 30,
      method: "POST",
      route: "/v1/threads",
      status: 201,
      uid: "wanda",
      duration_ms: expect.any(Number),
    });
    expect(requestLine(output, refused)).toMatchObject({
      method: "GET",
      route: "/v1/runs/{run_id}",
      status: 401,
      error_code: "unauthenticated",
    });
    // Exactly one line per request, each naming its id once (no rebound key).
    for (const id of [created, refused]) {
      const mine = output
        .split("\n")
        .filter((l) => l.includes(`"msg":"request"`) && l.includes(id));
      expect(mine).toHaveLength(1);
      expect(mine[0]?.split('"request_id":').length).toBe(2);
    }
    // The metrics line (0031) is JSON too, its labels whole.
    expect(jsonLines(output).find((l) => l.msg === "metrics")).toMatchObject({
      metrics: expect.arrayContaining([
        expect.objectContaining({
          name: "workcell_http_requests_total",
          labels: expect.objectContaining({
            route: expect.any(String),
            status: expect.any(String),
          }),
        }),
      ]),
    });
    const privateKey = (JSON.parse(vars.CAPABILITY_PRIVATE_KEY ?? "{}") as { d: string }).d;
    for (const secret of [SECRET, token, privateKey, vars.DATABASE_URL, COLLECTOR_TOKEN, title]) {
      expect(output).not.toContain(secret);
    }
  });

  test("a submitted run is one trace: the Worker continues the caller's traceparent, the agent-host the queue hop", async () => {
    const token = await mintDevToken(SECRET, "tracy");
    const traceId = randomBytes(16).toString("hex");
    const callerSpanId = randomBytes(8).toString("hex");
    const res = await fetch(`${worker.url}/v1/runs`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${token}`,
        "content-type": "application/json",
        traceparent: traceparent(traceId, callerSpanId),
      },
      body: JSON.stringify({ input: "echo traced-on-workers" }),
    });
    expect(res.status).toBe(202);
    const { run } = (await res.json()) as { run: Run };
    expect((await runToEnd(worker.url, token, run.run_id)).status).toBe("succeeded");

    const spans = (
      await collector.until((all) =>
        all.some((s) => s.traceId === traceId && s.service === A && s.name === "run.execute"),
      )
    ).filter((s) => s.traceId === traceId);
    expectDispatchTrace(spans, {
      entryService: SERVICE,
      agentHostService: A,
      callerSpanId,
      runId: run.run_id,
    });
    expect(oneSpan(spans, A, "sandbox.exec").attributes["workcell.exec_status"]).toBe("exited");
    // The header from OTEL_EXPORTER_OTLP_HEADERS reached the collector (the Worker's exports
    // are the only ones that carry it).
    expect(collector.authorizations()).toContain(`Bearer ${COLLECTOR_TOKEN}`);
  }, 180_000);

  test("the Cron Trigger's re-dispatch continues the trace stored with the run", async () => {
    // No consumer from here on: the re-sent run stays pending.
    await agentHost?.stop();
    agentHost = undefined;
    const token = await mintDevToken(SECRET, "sweepy");
    const traceId = randomBytes(16).toString("hex");
    const res = await fetch(`${worker.url}/v1/runs`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${token}`,
        "content-type": "application/json",
        traceparent: traceparent(traceId, randomBytes(8).toString("hex")),
      },
      body: JSON.stringify({ input: "lost" }),
    });
    expect(res.status).toBe(202);
    const { run: created } = (await res.json()) as { run: Run };
    // Its first dispatch was sent (and exported); then its message is "lost".
    await collector.until((all) =>
      all.some((s) => s.traceId === traceId && s.name === "run.dispatch publish"),
    );
    await database.sql`update agent_runs set dispatched_at = null where run_id = ${created.run_id}`;
    const scheduled = await fetch(`${worker.url}/__scheduled?cron=*+*+*+*+*`);
    expect(scheduled.status).toBe(200);
    const spans = (
      await collector.until(
        (all) =>
          all.filter((s) => s.traceId === traceId && s.name === "run.dispatch publish").length ===
          2,
      )
    ).filter((s) => s.traceId === traceId);
    const request = oneSpan(spans, SERVICE, "POST /v1/runs");
    const publishes = spans.filter((s) => s.name === "run.dispatch publish");
    // The submission's publish and the sweep's: both children of the request's span.
    expect(publishes.map((s) => s.parentSpanId)).toEqual([request.spanId, request.spanId]);
    expect(new Set(publishes.map((s) => s.spanId)).size).toBe(2);
    // The sweep's spans are exported after its work: the run is marked dispatched again.
    const [row] = await database.sql<{ dispatched: boolean }[]>`
      select dispatched_at is not null as dispatched from agent_runs where run_id = ${created.run_id}`;
    expect(row?.dispatched, worker.output()).toBe(true);
  }, 120_000);
});
