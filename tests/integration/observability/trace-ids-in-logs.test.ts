import { randomBytes } from "node:crypto";
import { Writable } from "node:stream";
import { Hono } from "hono";
import pino from "pino";
import { Registry } from "prom-client";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { parseEnv } from "../../../shared/env/parse-env.ts";
import { type RequestContextEnv, requestContext } from "../../../shared/http/request-context.ts";
import { type TraceEnv, traceRequests } from "../../../shared/http/trace-requests.ts";
import { createWorkcellMetrics } from "../../../shared/metrics/workcell-metrics.ts";
import { otlpExporterConfigOf } from "../../../shared/telemetry/otlp-exporter-config.ts";
import { type StartedTracing, startTracing } from "../../../shared/telemetry/start-tracing.ts";
import { tracingEnvSchema } from "../../../shared/telemetry/tracing-env.ts";
import { type OtlpCollector, startOtlpCollector } from "../../support/otlp-collector.ts";

// Issue 32 (6): with tracing on, a request's log lines carry the trace_id and span_id of
// its SERVER span (the one the SDK exports, here to a real OTLP collector); with tracing
// off they carry none.

let collector: OtlpCollector;
let on: StartedTracing;

beforeAll(async () => {
  collector = await startOtlpCollector();
  const env = parseEnv(tracingEnvSchema, {
    OTEL_TRACES_EXPORTER: "otlp",
    OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: collector.tracesUrl,
    OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
    OTEL_SERVICE_NAME: "trace-log-test",
  });
  on = await startTracing(env, "trace-log-test", { explicit: { otlp: otlpExporterConfigOf(env) } });
});
afterAll(async () => {
  await on?.shutdown();
  await collector?.close();
});

/** An app as the planes wire it: traceRequests first, then the request context. */
function appWith(tracing: StartedTracing["tracing"]) {
  const lines: Array<Record<string, unknown>> = [];
  const sink = new Writable({
    write(chunk, _enc, done) {
      for (const l of String(chunk).split("\n")) if (l !== "") lines.push(JSON.parse(l));
      done();
    },
  });
  const logger = pino({ level: "info" }, sink);
  const app = new Hono<RequestContextEnv & TraceEnv>();
  app.use(traceRequests(tracing));
  app.use(requestContext({ logger, plane: "api", metrics: createWorkcellMetrics(new Registry()) }));
  app.get("/v1/thing", (c) => {
    c.var.logger.info("inside the handler");
    return c.text("ok");
  });
  return { app, lines };
}

describe("trace ids in log lines", () => {
  test("tracing on: the request's lines carry its SERVER span's trace_id and span_id", async () => {
    const { app, lines } = appWith(on.tracing);
    const traceId = randomBytes(16).toString("hex");
    const res = await app.request("/v1/thing", {
      headers: { traceparent: `00-${traceId}-${randomBytes(8).toString("hex")}-01` },
    });
    expect(res.status).toBe(200);
    await on.flush();
    const [span] = await collector
      .until((spans) => spans.some((s) => s.service === "trace-log-test" && s.traceId === traceId))
      .then((spans) => spans.filter((s) => s.traceId === traceId));
    expect(span?.name).toBe("GET /v1/thing");
    const mine = lines.filter((l) => l.msg === "inside the handler" || l.msg === "request");
    expect(mine).toHaveLength(2);
    for (const line of mine) {
      expect(line).toMatchObject({ trace_id: traceId, span_id: span?.spanId });
    }
  });

  test("tracing off: no trace_id or span_id on any line", async () => {
    const off = await startTracing(parseEnv(tracingEnvSchema, {}), "off");
    const { app, lines } = appWith(off.tracing);
    const res = await app.request("/v1/thing", {
      headers: {
        traceparent: `00-${randomBytes(16).toString("hex")}-${randomBytes(8).toString("hex")}-01`,
      },
    });
    expect(res.status).toBe(200);
    expect(lines.length).toBeGreaterThan(0);
    for (const line of lines) {
      expect(line).not.toHaveProperty("trace_id");
      expect(line).not.toHaveProperty("span_id");
    }
  });
});
