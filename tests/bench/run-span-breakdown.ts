// Where a run's time goes, from its spans (issue 41 item 2): a bench records the spans of
// a series of runs (an in-memory exporter behind a Tracing it switches on for that series
// only) and prints the median of each stage between the submit and the terminal event.
// Every stage is measured between span edges of one trace (one run), so the stages add up
// to the span of the trace; the client's own figure adds the event stream's delivery.
import type { ReadableSpan } from "@opentelemetry/sdk-trace";

type Edges = { start: number; end: number };

/** The API's span of the run's submit (shared/http/trace-requests.ts: method and route). */
const SUBMIT = "POST /v1/threads/{thread_id}/runs";
const PUBLISH = "run.dispatch publish";
const DELIVERY = "run.dispatch process";
/** Spans inside "quota, Workdir, skills" (the skills refresh runs beside the other two). */
const INSIDE_PREPARE = ["quota.check", "workdir.prepare", "skills.refresh"] as const;

/** The stages, each from one span edge to another of the same trace (ms). */
const STAGES: ReadonlyArray<{ name: string; from: Edge; to: Edge }> = [
  { name: "submit (POST → published)", from: [SUBMIT, "start"], to: [PUBLISH, "start"] },
  { name: "queue hop (published → delivered)", from: [PUBLISH, "start"], to: [DELIVERY, "start"] },
  { name: "claim (delivered → run claimed)", from: [DELIVERY, "start"], to: ["run.claim", "end"] },
  { name: "claimed → prepare", from: ["run.claim", "end"], to: ["run.prepare", "start"] },
  {
    name: "quota, Workdir, skills",
    from: ["run.prepare", "start"],
    to: ["sandbox.acquire", "start"],
  },
  { name: "sandbox.acquire", from: ["sandbox.acquire", "start"], to: ["sandbox.acquire", "end"] },
  { name: "acquired → prepare ends", from: ["sandbox.acquire", "end"], to: ["run.prepare", "end"] },
  { name: "prepared → model call", from: ["run.prepare", "end"], to: ["model.call", "start"] },
  { name: "model call → first exec", from: ["model.call", "start"], to: ["sandbox.exec", "start"] },
  {
    name: "first exec (lease, scans, command)",
    from: ["sandbox.exec", "start"],
    to: ["sandbox.exec", "end"],
  },
  { name: "exec → finish", from: ["sandbox.exec", "end"], to: ["run.finish", "start"] },
  {
    name: "finish (terminal event committed)",
    from: ["run.finish", "start"],
    to: ["run.finish", "end"],
  },
];
type Edge = readonly [span: string, edge: "start" | "end"];

const ms = (t: [number, number]) => t[0] * 1000 + t[1] / 1e6;

/**
 * One line per stage: its median over the runs traced, and its share of the median of
 * their sums (POST start → terminal event committed). Runs missing a span are skipped.
 */
export function spanBreakdown(spans: readonly ReadableSpan[], clientMedianMs: number): string[] {
  const traces = new Map<string, Map<string, Edges>>();
  for (const span of spans) {
    const id = span.spanContext().traceId;
    const byName = traces.get(id) ?? new Map<string, Edges>();
    traces.set(id, byName);
    // The first of a name: a trace has one of each of these (one exec for `true`).
    if (!byName.has(span.name)) {
      byName.set(span.name, { start: ms(span.startTime), end: ms(span.endTime) });
    }
  }
  const rows = STAGES.map(() => [] as number[]);
  const inside = INSIDE_PREPARE.map(() => [] as number[]);
  const totals: number[] = [];
  for (const byName of traces.values()) {
    const at = ([name, edge]: Edge) => byName.get(name)?.[edge];
    const values = STAGES.map((s) => {
      const from = at(s.from);
      const to = at(s.to);
      return from === undefined || to === undefined ? undefined : to - from;
    });
    if (values.some((v) => v === undefined)) continue;
    for (const [i, v] of values.entries()) rows[i]?.push(v ?? 0);
    for (const [i, name] of INSIDE_PREPARE.entries()) {
      const span = byName.get(name);
      if (span) inside[i]?.push(span.end - span.start);
    }
    totals.push(values.reduce<number>((a, v) => a + (v ?? 0), 0));
  }
  if (totals.length === 0) {
    const names = [...new Set(spans.map((s) => s.name))].sort().join(", ");
    return [
      `  (no complete run trace among ${traces.size} traces; span names: ${names || "none"})`,
    ];
  }
  const total = median(totals);
  const lines = STAGES.map((s, i) => {
    const m = median(rows[i] ?? []);
    return `  ${s.name.padEnd(40)} ${m.toFixed(1).padStart(7)} ms  ${((m / total) * 100).toFixed(0).padStart(3)} %`;
  });
  lines.push(
    `  (inside it: ${INSIDE_PREPARE.map((n, i) => `${n} ${median(inside[i] ?? []).toFixed(1)} ms`).join(", ")})`,
    `  ${"sum (POST start → terminal committed)".padEnd(40)} ${total.toFixed(1).padStart(7)} ms  (${totals.length} runs traced)`,
    `  ${"client submit → run.completed (median)".padEnd(40)} ${clientMedianMs.toFixed(1).padStart(7)} ms  (the rest: the client's POST and the event stream)`,
  );
  return lines;
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? 0;
}
