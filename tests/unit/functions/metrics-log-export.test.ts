import { Registry } from "prom-client";
import { afterEach, describe, expect, test } from "vitest";
import { createMetricsLogFlusher } from "../../../shared/metrics/log-metrics.ts";
import { createWorkcellMetrics } from "../../../shared/metrics/workcell-metrics.ts";
import { captureLogs } from "../../support/log-capture.ts";
import { type UnitApp, unitApp } from "./unit-app.ts";

// Lambda and Workers cannot be scraped: the app's registry is written as one `metrics`
// log line after each request and reset (decision 0031), the same counters the Node
// entries serve on /metrics.

let u: UnitApp | undefined;
afterEach(async () => {
  await u?.close();
  u = undefined;
});

describe("metrics leaving a runtime nobody scrapes", () => {
  test("each request writes one metrics line with exactly its own series", async () => {
    const { logger, lines } = captureLogs();
    const metrics = createWorkcellMetrics(new Registry());
    u = await unitApp({ logger, metrics, exportMetrics: createMetricsLogFlusher(metrics, logger) });

    const refused = await u.app.request("/v1/projects");
    expect(refused.status).toBe(401);
    const token = await u.token("alice");
    const missing = await u.app.request("/v1/nowhere", {
      headers: { Authorization: `Bearer ${token}` },
    });
    expect(missing.status).toBe(404);

    const exported = lines.filter((l) => l.msg === "metrics");
    expect(exported).toHaveLength(2);
    const [first, second] = exported.map((l) => l.metrics as Array<Record<string, unknown>>);
    expect(first?.filter((s) => s.name === "workcell_http_requests_total")).toEqual([
      {
        name: "workcell_http_requests_total",
        type: "counter",
        labels: { plane: "api", method: "GET", route: "/v1/projects", status: "401" },
        value: 1,
      },
    ]);
    // A delta: the first request is not counted again.
    expect(second?.filter((s) => s.name === "workcell_http_requests_total")).toEqual([
      {
        name: "workcell_http_requests_total",
        type: "counter",
        labels: { plane: "api", method: "GET", route: "unmatched", status: "404" },
        value: 1,
      },
    ]);
    const histogram = second?.find((s) => s.name === "workcell_http_request_duration_seconds");
    expect(histogram).toMatchObject({ type: "histogram", count: 1 });
    expect(histogram?.buckets).toMatchObject({ "+Inf": 1 });
    // The request line precedes the export of its counts.
    const order = lines.map((l) => l.msg).filter((m) => m === "request" || m === "metrics");
    expect(order).toEqual(["request", "metrics", "request", "metrics"]);
  });

  test("nothing moved, nothing written", async () => {
    const { logger, lines } = captureLogs();
    const metrics = createWorkcellMetrics(new Registry());
    await createMetricsLogFlusher(metrics, logger)();
    expect(lines.filter((l) => l.msg === "metrics")).toEqual([]);
  });
});
