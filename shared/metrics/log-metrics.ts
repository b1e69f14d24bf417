import type { Logger } from "pino";
import type { WorkcellMetrics } from "./workcell-metrics.ts";

/** One series of a flushed line: a counter's value or a histogram's count, sum and buckets. */
export type LoggedSeries =
  | { name: string; type: "counter"; labels: Record<string, string>; value: number }
  | {
      name: string;
      type: "histogram";
      labels: Record<string, string>;
      count: number;
      sum: number;
      /** Cumulative counts by upper bound (`le`), as Prometheus' buckets. */
      buckets: Record<string, number>;
    };

/**
 * How metrics leave runtimes that cannot be scraped (Lambda, Workers; decision 0031): the
 * same registry the handlers count into is written as one `metrics` log line of what it
 * holds, then reset, so every line is a delta and the sum of all lines is the total. The
 * log pipeline (CloudWatch metric filters or Logs Insights, Workers Logpush) aggregates
 * them. Lines without any movement are not written.
 */
export function createMetricsLogFlusher(
  metrics: WorkcellMetrics,
  logger: Logger,
): () => Promise<void> {
  return async function flushMetrics() {
    const series = await loggedSeries(metrics);
    metrics.registry.resetMetrics();
    if (series.length > 0) logger.info({ metrics: series }, "metrics");
  };
}

/** The registry's non-zero series as log entries. */
export async function loggedSeries(metrics: WorkcellMetrics): Promise<LoggedSeries[]> {
  const out: LoggedSeries[] = [];
  for (const metric of await metrics.registry.getMetricsAsJSON()) {
    // prom-client's typings say an enum; at run time `type` is the exposition's word.
    const type = metric.type as unknown as string;
    const values = metric.values as unknown as readonly HistogramValue[];
    if (type === "counter") {
      for (const v of values) {
        if (v.value !== 0) {
          out.push({
            name: metric.name,
            type: "counter",
            labels: stringLabels(v.labels),
            value: v.value,
          });
        }
      }
    } else if (type === "histogram") {
      out.push(...histogramSeries(metric.name, values));
    }
  }
  return out;
}

type HistogramValue = {
  value: number;
  labels: Partial<Record<string, string | number>>;
  metricName?: string;
};

function histogramSeries(name: string, values: readonly HistogramValue[]): LoggedSeries[] {
  const byLabels = new Map<string, LoggedSeries & { type: "histogram" }>();
  for (const v of values) {
    const { le, ...rest } = v.labels;
    const labels = stringLabels(rest);
    const key = JSON.stringify(labels);
    let entry = byLabels.get(key);
    if (entry === undefined) {
      entry = { name, type: "histogram", labels, count: 0, sum: 0, buckets: {} };
      byLabels.set(key, entry);
    }
    if (v.metricName === `${name}_count`) entry.count = v.value;
    else if (v.metricName === `${name}_sum`) entry.sum = v.value;
    else if (le !== undefined) entry.buckets[String(le)] = v.value;
  }
  return [...byLabels.values()].filter((entry) => entry.count > 0);
}

function stringLabels(labels: Partial<Record<string, string | number>>): Record<string, string> {
  return Object.fromEntries(
    Object.entries(labels).flatMap(([k, v]) => (v === undefined ? [] : [[k, String(v)]])),
  );
}
