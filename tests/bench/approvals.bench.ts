// Approvals (issue 36) on the local Workcell over HTTP, as a client meets them.
//  - resume: a run of `true` whose bash call waits for approval in a thread whose sandbox
//    is warm; timed from the approving POST to its `run.completed` (the resume: a claim on
//    any node, the sandbox acquired again, the stored call run). Against the same thread's
//    warm next turn (POST of a run of `true` to its `run.completed`) and a raw exec.
//  - waiting: N runs of N threads paused at once (process tier); the worker slots they hold
//    (runs `running`) and the agent-host's RSS growth (the stack runs in this process).
import { randomUUID } from "node:crypto";
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Docker from "dockerode";
import {
  containerCreateOptions,
  SANDBOX_USER,
} from "../../agent-host/sandbox/container/container-spec.ts";
import { sandboxConfigSchema } from "../../agent-host/sandbox/sandbox-config.ts";
import { REQUEST_TIMEOUT_MS, startBenchStack } from "./local-stack-bench.ts";
import { benchTargets, measure, report, rssNote, summarize } from "./measure.ts";

const RESUMES = 15;
const WARM_TURNS = 15;
const EXEC_RUNS = 100;
const WAITING = Number(process.env.APPROVALS_BENCH_WAITING ?? 100);
const BATCH = 8;
const targets = benchTargets("approvals", [
  { measure: "resume-vs-raw-exec", op: "<=", target: 2.5 },
  { measure: "resume-vs-warm-turn", op: "<=", target: 1.5 },
  { measure: "slots-held-while-waiting", op: "<=", target: 0 },
]);
const ASK = { approvals: { tools: ["bash"] } };

const docker = new Docker();
const bench = await startBenchStack(docker, "bench");
const scratch = await mkdtemp(join(tmpdir(), "workcell-bench-approvals-"));
let raw: Docker.Container | undefined;

/** One API call; a 429 (the user's requests_per_minute) waits its Retry-After and retries. */
const call = async (method: string, path: string, body?: unknown) => {
  for (;;) {
    const res = await fetch(`${bench.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${bench.token}`, "content-type": "application/json" },
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
  const exec = await measure(
    "raw sandbox exec `true` (baseline)",
    async () => {
      const e = await container.exec({
        Cmd: ["/bin/sh", "-c", "true"],
        User: SANDBOX_USER,
        AttachStdout: true,
        AttachStderr: true,
      });
      const stream = await e.start({});
      stream.resume();
      await new Promise((resolve) => stream.once("end", resolve));
    },
    { runs: EXEC_RUNS },
  );

  // One thread, its sandbox kept warm by a first (untimed) turn.
  const { threadId, projectId } = await bench.api.newThread();
  await bench.api.run(threadId, "true");
  const warm: number[] = [];
  for (let i = 0; i < WARM_TURNS; i++)
    warm.push((await bench.api.run(threadId, "true")).terminalMs);
  const resumes: number[] = [];
  for (let i = 0; i < RESUMES; i++) {
    const { runId, events } = await bench.api.start(threadId, "true", undefined, ASK);
    const approvalId = await pendingApproval(runId);
    const approvedAt = performance.now();
    await call("POST", `/v1/runs/${runId}/approvals/${approvalId}`, { decision: "approve" });
    const ended = await events;
    if (ended.status !== "succeeded") throw new Error(`a resumed run ended ${ended.status}`);
    // `events` timed from its own POST: the resume is what came after the approval.
    resumes.push(performance.now() - approvedAt);
  }
  const warmTurn = summarize("warm next turn `true` (POST → run.completed)", warm);
  const resume = summarize("approve → run.completed (warm sandbox)", resumes);
  report("approval resume", exec, [warmTurn, resume]);
  targets.record("resume-vs-raw-exec", resume.medianMs / exec.medianMs);
  targets.record("resume-vs-warm-turn", resume.medianMs / warmTurn.medianMs);

  // Many runs waiting at once: each paused after a real run in its own thread.
  const rssBefore = process.memoryUsage().rss;
  // Submitted in batches (no event stream each: a user may hold only a few open), each
  // batch paused before the next, so the queued-runs limit is never the bound.
  const waiting: string[] = [];
  for (let i = 0; i < WAITING; i += BATCH) {
    const batch = await Promise.all(
      Array.from({ length: Math.min(BATCH, WAITING - i) }, async () => {
        const thread = (await bench.api.newThread(projectId)).threadId;
        const run = await call("POST", `/v1/threads/${thread}/runs`, {
          input: "true",
          agent: { sandbox: "process", ...ASK },
        });
        return String(run.run_id);
      }),
    );
    for (const runId of batch) await pendingApproval(runId);
    waiting.push(...batch);
  }
  const statuses = await Promise.all(
    waiting.map(async (id) => String((await call("GET", `/v1/runs/${id}`)).status)),
  );
  const holding = statuses.filter((s) => s === "running").length;
  const growthMiB = (process.memoryUsage().rss - rssBefore) / 2 ** 20;
  console.log(
    `\n${WAITING} runs awaiting approval at once: ${statuses.filter((s) => s === "awaiting_approval").length} awaiting, ${holding} holding a worker slot; agent-host RSS growth ${growthMiB.toFixed(1)} MiB (${rssNote()})`,
  );
  targets.record("slots-held-while-waiting", holding);
  for (const runId of waiting) await call("POST", `/v1/runs/${runId}/cancel`, {});
} finally {
  await raw?.remove({ force: true }).catch(() => {});
  await bench.stop();
  await rm(scratch, { recursive: true, force: true });
}
