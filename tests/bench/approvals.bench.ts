// Approvals (issue 36) on the local Workcell over HTTP, as a client meets them.
//  - resume: a run of `true` whose bash call waits for approval in a thread whose sandbox
//    is warm; timed from the approving POST to its `run.completed` (the resume: the
//    decision puts the run in line and wakes the nodes in its transaction, a claim, the
//    kept sandbox acquired again, the stored call run). Against the same thread's warm next
//    turn (POST of a run of `true` to its `run.completed`) and a raw exec. Measured with
//    tracing off; then more resumes with tracing on (in-memory exporter) give the breakdown
//    of where the time goes (approvals-resume-breakdown.ts).
//  - waiting: N runs (default 1,000) of N new threads paused at once on the process tier
//    (approvals-waiting.ts): worker slots held, live sandboxes, RSS growth per waiting run,
//    the wall time, and a sample approved that each runs its command exactly once.
import { randomUUID } from "node:crypto";
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ReadableSpan } from "@opentelemetry/sdk-trace";
import Docker from "dockerode";
import {
  containerCreateOptions,
  SANDBOX_USER,
} from "../../agent-host/sandbox/container/container-spec.ts";
import { sandboxConfigSchema } from "../../agent-host/sandbox/sandbox-config.ts";
import { epochNow, printResumeBreakdown, type TracedResume } from "./approvals-resume-breakdown.ts";
import { BENCH_UID, measureWaiting } from "./approvals-waiting.ts";
import { REQUEST_TIMEOUT_MS, startBenchStack } from "./local-stack-bench.ts";
import { benchTargets, report, rssNote, summarize } from "./measure.ts";
import { switchedTracing } from "./switched-tracing.ts";

const ROUNDS = 21;
const EXECS_PER_ROUND = 3;
const TRACED_RESUMES = 11;
const WAITING = Number(process.env.APPROVALS_BENCH_WAITING ?? 1000);
const SAMPLE = 20;
const targets = benchTargets("approvals", [
  { measure: "resume-vs-raw-exec", op: "<=", target: 2.5 },
  { measure: "resume-vs-warm-turn", op: "<=", target: 1.5 },
  { measure: "slots-held-while-waiting", op: "<=", target: 0 },
]);
const ASK = { approvals: { tools: ["bash"] } };

// Tracing is switched on only for the breakdown's resumes (as in tracing.bench.ts).
const switched = switchedTracing();

const docker = new Docker();
const bench = await startBenchStack(docker, BENCH_UID, { tracing: switched.tracing });
const scratch = await mkdtemp(join(tmpdir(), "workcell-bench-approvals-"));
let raw: Docker.Container | undefined;

/** One API call; a 429 (the user's requests_per_minute) waits its Retry-After and retries. */
const callAs = async (token: string, method: string, path: string, body?: unknown) => {
  for (;;) {
    const res = await fetch(`${bench.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    });
    if (res.status === 429) {
      await res.body?.cancel();
      const wait = Number(res.headers.get("retry-after") ?? 1);
      await new Promise((resolve) => setTimeout(resolve, wait * 1000));
      continue;
    }
    if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`);
    return res.json() as Promise<Record<string, unknown>>;
  }
};
const call = (method: string, path: string, body?: unknown) =>
  callAs(bench.token, method, path, body);
const adminCall = (method: string, path: string, body?: unknown) =>
  callAs(bench.adminToken, method, path, body);

/** Polls the run until it awaits approval; returns its pending approval's id. */
async function pendingApproval(runId: string): Promise<string> {
  for (;;) {
    const run = await call("GET", `/v1/runs/${runId}`);
    if (run.status === "awaiting_approval") break;
    if (["succeeded", "failed", "cancelled"].includes(String(run.status))) {
      throw new Error(`run ${runId} ended ${run.status} before asking`);
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  const { items } = (await call("GET", `/v1/runs/${runId}/approvals`)) as {
    items: { approval_id: string; status: string }[];
  };
  const pending = items.find((a) => a.status === "pending");
  if (pending === undefined) throw new Error(`run ${runId} has no pending approval`);
  return pending.approval_id;
}

try {
  // Baseline: a raw exec in a container of the sandbox's image and hardening.
  const config = sandboxConfigSchema.parse({ image: bench.image });
  await mkdir(join(scratch, "workspace", "work"), { recursive: true });
  await mkdir(join(scratch, "skills"), { recursive: true });
  const spec = containerCreateOptions(
    {
      sandboxId: `bench-approvals-${randomUUID().slice(0, 8)}`,
      generation: 1,
      uidDirname: "bench",
      runtimeScopeId: randomUUID(),
      workdirPath: "work",
      nodeId: "bench-approvals-raw",
      workspaceHostPath: join(scratch, "workspace"),
      skillsHostPath: join(scratch, "skills"),
    },
    config,
  );
  raw = await docker.createContainer({ ...spec, Labels: { "workcell.bench": "approvals" } });
  await raw.start();
  const container = raw;
  const rawExec = async () => {
    const started = performance.now();
    const e = await container.exec({
      Cmd: ["/bin/sh", "-c", "true"],
      User: SANDBOX_USER,
      AttachStdout: true,
      AttachStderr: true,
    });
    const stream = await e.start({});
    stream.resume();
    await new Promise((resolve) => stream.once("end", resolve));
    return performance.now() - started;
  };

  // One thread, its sandbox kept warm by a first (untimed) turn.
  const { threadId } = await bench.api.newThread();
  await bench.api.run(threadId, "true");
  const warmTurn = async () => (await bench.api.run(threadId, "true")).terminalMs;
  /** One run paused in the thread, then approved: the resume, timed from the POST. */
  const resumeOnce = async (): Promise<TracedResume> => {
    const { runId, events } = await bench.api.start(threadId, "true", undefined, ASK);
    const approvalId = await pendingApproval(runId);
    const approvedAt = epochNow();
    await call("POST", `/v1/runs/${runId}/approvals/${approvalId}`, { decision: "approve" });
    const answeredAt = epochNow();
    const ended = await events;
    if (ended.status !== "succeeded") throw new Error(`a resumed run ended ${ended.status}`);
    // `events` timed from its own POST: the resume is what came after the approval.
    return { runId, approvedAt, answeredAt, completedAt: epochNow() };
  };
  // Interleaved rounds (two untimed first): the machine is shared, and a ratio is only
  // fair when both sides meet the same load.
  const times = { exec: [] as number[], warm: [] as number[], resume: [] as number[] };
  for (let round = -2; round < ROUNDS; round++) {
    const execs = [];
    for (let i = 0; i < EXECS_PER_ROUND; i++) execs.push(await rawExec());
    const warm = await warmTurn();
    const r = await resumeOnce();
    if (round < 0) continue;
    times.exec.push(...execs);
    times.warm.push(warm);
    times.resume.push(r.completedAt - r.approvedAt);
  }
  const exec = summarize("raw sandbox exec `true` (baseline)", times.exec);
  const warm = summarize("warm next turn `true` (POST → run.completed)", times.warm);
  const resume = summarize("approve → run.completed (warm sandbox)", times.resume);
  report(`approval resume (${ROUNDS} interleaved rounds)`, exec, [warm, resume]);
  targets.record("resume-vs-raw-exec", resume.medianMs / exec.medianMs);
  targets.record("resume-vs-warm-turn", resume.medianMs / warm.medianMs);

  switched.set(true);
  const traced: TracedResume[] = [];
  for (let i = 0; i < TRACED_RESUMES; i++) traced.push(await resumeOnce());
  switched.set(false);
  // The client reads run.completed at the outcome's commit, before its spans end: flushed
  // until both executions (the pause, the resume) of every traced run have ended.
  const spans: ReadableSpan[] = [];
  const executions = (runId: string) =>
    spans.filter(
      (span) => span.name === "run.execute" && span.attributes["workcell.run_id"] === runId,
    ).length;
  for (;;) {
    spans.push(...(await switched.take()));
    if (traced.every((r) => executions(r.runId) >= 2)) break;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  printResumeBreakdown(traced, spans);

  // Many runs waiting at once; the bench's own polling must not meet requests_per_minute.
  await adminCall("PUT", `/v1/admin/users/${BENCH_UID}/limits`, {
    requests_per_minute: 1_000_000,
  });
  console.log(`\n## ${WAITING} runs awaiting approval at once (process tier)`);
  const w = await measureWaiting(bench, call, adminCall, WAITING, SAMPLE, ASK);
  console.log(
    `${WAITING} runs paused in ${w.wallSeconds.toFixed(0)} s (${((w.wallSeconds * 1000) / WAITING).toFixed(0)} ms per run, 2 cores): ${w.awaiting} awaiting, ${w.holdingSlots} holding a worker slot (user's running_runs ${w.runningRuns}); node's live sandboxes ${w.liveSandboxes}`,
  );
  console.log(
    `agent-host (whole stack in this process) after a full GC: RSS growth ${w.rssGrowthMiB.toFixed(1)} MiB = ${((w.rssGrowthMiB * 1024) / WAITING).toFixed(1)} KiB per waiting run, JS heap growth ${w.heapGrowthMiB.toFixed(1)} MiB = ${((w.heapGrowthMiB * 1024) / WAITING).toFixed(1)} KiB per waiting run (peak RSS ${w.peakRssMiB.toFixed(0)} MiB; ${rssNote()})`,
  );
  console.log(
    `approved a sample (4 at a time): ${w.sampleExactlyOnce} of ${w.sample} succeeded with their command run exactly once (second decision 409); ${w.sampleRanTwice} ran it more than once`,
  );
  // A resume that failed is printed above with its error (a finding, decision 0175); one
  // that ran its command twice, or a run that did not wait, is a broken guarantee.
  if (w.awaiting !== WAITING || w.sampleRanTwice !== 0) {
    throw new Error("not every run waited, or a sampled resume ran its command twice");
  }
  targets.record("slots-held-while-waiting", w.holdingSlots + w.runningRuns);
} finally {
  await raw?.remove({ force: true }).catch(() => {});
  await bench.stop();
  await rm(scratch, { recursive: true, force: true });
}
