// The approvals bench's resume breakdown: where the time from the approving POST to the
// client's `run.completed` goes, read from the spans the stack records (tracing on, an
// in-memory exporter) around each traced resume. Stages, in order:
//   decide POST   the route's transaction (run lock, decision, run in line, NOTIFYs)
//   → claim       from the approving POST to the claim (the node's wake and fair claim)
//   prepare       quota, Workdir, skills and the sandbox acquire (warm: reused)
//   → exec        the loop taking up the decision (approval claim, both hash checks)
//   exec          the approved command in the sandbox
//   → client      from the command's end to the client reading run.completed: the
//                 outcome's transaction (run.finish: status, run.completed, NOTIFYs at
//                 commit), the event stream's wake and the frame
import { hrTimeToMilliseconds } from "@opentelemetry/core";
import type { ReadableSpan } from "@opentelemetry/sdk-trace";

/** One traced resume, its client-side times on the epoch clock the spans use. */
export type TracedResume = {
  readonly runId: string;
  /** Just before the approving POST was sent. */
  readonly approvedAt: number;
  /** When the POST's answer arrived. */
  readonly answeredAt: number;
  /** When the client read `run.completed`. */
  readonly completedAt: number;
};

/** The epoch clock OpenTelemetry stamps spans with (timeOrigin + the monotonic clock). */
export function epochNow(): number {
  return performance.timeOrigin + performance.now();
}

const STAGES = [
  "decide POST",
  "→ claim",
  "prepare",
  "  of which sandbox.acquire",
  "→ exec",
  "exec",
  "→ client",
  "  of which run.finish",
] as const;
type Stage = (typeof STAGES)[number];

const start = (s: ReadableSpan) => hrTimeToMilliseconds(s.startTime);
const end = (s: ReadableSpan) => hrTimeToMilliseconds(s.endTime);

/** The stages of one resume, or why its spans were incomplete. */
function stagesOf(resume: TracedResume, spans: readonly ReadableSpan[]): Map<Stage, number> {
  const inWindow = spans
    .filter((s) => start(s) >= resume.approvedAt && start(s) <= resume.completedAt)
    .sort((a, b) => start(a) - start(b));
  const first = (name: string, after = resume.approvedAt) => {
    const span = inWindow.find((s) => s.name === name && start(s) >= after);
    if (span === undefined) throw new Error(`run ${resume.runId}: no ${name} span after approval`);
    return span;
  };
  const claim = inWindow.find(
    (s) => s.name === "run.claim" && s.attributes["workcell.run_id"] === resume.runId,
  );
  if (claim === undefined) throw new Error(`run ${resume.runId}: no run.claim span`);
  const prepare = first("run.prepare", start(claim));
  const acquire = first("sandbox.acquire", start(prepare));
  const exec = first("sandbox.exec", end(prepare));
  const finish = first("run.finish", end(exec));
  return new Map<Stage, number>([
    ["decide POST", resume.answeredAt - resume.approvedAt],
    ["→ claim", start(claim) - resume.approvedAt],
    ["prepare", end(prepare) - start(prepare)],
    ["  of which sandbox.acquire", end(acquire) - start(acquire)],
    ["→ exec", start(exec) - end(prepare)],
    ["exec", end(exec) - start(exec)],
    ["→ client", resume.completedAt - end(exec)],
    ["  of which run.finish", end(finish) - start(finish)],
  ]);
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? 0;
};

/** Prints each stage's median over the traced resumes (the stages overlap where noted). */
export function printResumeBreakdown(
  resumes: readonly TracedResume[],
  spans: readonly ReadableSpan[],
): void {
  const all = resumes.map((r) => stagesOf(r, spans));
  const total = median(resumes.map((r) => r.completedAt - r.approvedAt));
  console.log(
    `\n## approve → run.completed, where it goes (median of ${resumes.length} traced resumes; total ${total.toFixed(1)} ms)`,
  );
  console.log("(decide POST overlaps → claim: the nodes are woken inside its transaction)");
  for (const stage of STAGES) {
    const ms = median(all.map((stages) => stages.get(stage) ?? 0));
    console.log(`${stage.padEnd(28)} ${ms.toFixed(1).padStart(8)} ms`);
  }
}
