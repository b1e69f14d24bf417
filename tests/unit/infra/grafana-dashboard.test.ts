import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { Registry } from "prom-client";
import { describe, expect, test } from "vitest";
import { createWorkcellMetrics } from "../../../shared/metrics/workcell-metrics.ts";

const ROOT = join(import.meta.dirname, "../../..");

/** The series names Workcell registers (histograms with their _bucket/_sum/_count). */
async function exported(): Promise<{ families: Set<string>; samples: Set<string> }> {
  const metrics = createWorkcellMetrics(new Registry());
  const json = await metrics.registry.getMetricsAsJSON();
  const families = new Set(json.map((m) => m.name));
  const samples = new Set<string>();
  for (const m of json) {
    samples.add(m.name);
    for (const suffix of ["_bucket", "_sum", "_count"]) samples.add(`${m.name}${suffix}`);
  }
  return { families, samples };
}

const workcellNames = (text: string) => new Set(text.match(/workcell_[a-z_]+/g) ?? []);

describe("the dashboard and the docs name the series that exist", () => {
  test("every workcell_* series a dashboard panel queries is exported", async () => {
    const dashboard = JSON.parse(
      await readFile(join(ROOT, "infra/observability/grafana-dashboard.json"), "utf8"),
    ) as { panels: Array<{ title: string; targets: Array<{ expr: string }> }> };
    const { samples } = await exported();
    const queried = new Set<string>();
    for (const panel of dashboard.panels) {
      expect(panel.targets.length, panel.title).toBeGreaterThan(0);
      for (const target of panel.targets)
        for (const n of workcellNames(target.expr)) queried.add(n);
    }
    expect([...queried].filter((n) => !samples.has(n))).toEqual([]);
    // And every Workcell family is on the dashboard.
    const { families } = await exported();
    const base = (n: string) => n.replace(/_(bucket|sum|count)$/, "");
    expect([...families].filter((f) => ![...queried].some((q) => base(q) === f))).toEqual([]);
  });

  test("docs/observability.md documents every series and names no other", async () => {
    const doc = await readFile(join(ROOT, "docs/observability.md"), "utf8");
    const { families, samples } = await exported();
    const named = workcellNames(doc);
    expect([...named].filter((n) => !samples.has(n) && !n.endsWith("_"))).toEqual([]);
    expect([...families].filter((f) => !named.has(f))).toEqual([]);
    // docs/api.md's minimum set, by name.
    for (const name of [
      "workcell_http_requests_total",
      "workcell_runs_total",
      "workcell_run_queue_wait_seconds",
      "workcell_sandbox_creates_total",
      "workcell_sandbox_exec_seconds",
      "workcell_workspace_quota_rejections_total",
    ]) {
      expect(families.has(name), name).toBe(true);
    }
  });
});
