// Issue 38 (3), decision 0113: on the split deployment (infra/split/: two agent-host
// processes, few slots each, sandboxes kept warm), threads take turns back to back, so a
// thread's next turn often finds the node holding its warm sandbox busy. Before 0113 the
// other node claimed such a run and handed it back every 5 s (`sandbox_on_other_node`),
// up to `hand_back_limit`. Printed: hand-backs per 100 runs (every claim after a run's
// first is one: Σ(attempt − 1)), hand_back_limit failures, lost or doubled effects, and
// submit → start p50/p99 of all runs against the runs that started on another node than
// their thread's previous turn (they waited out a busy owner or found it gone).
import { randomBytes } from "node:crypto";
import Docker from "dockerode";
import postgres from "postgres";
import { LABEL } from "../../agent-host/sandbox/instance/container-labels.ts";
import { startSplit } from "../../infra/split/start-split.ts";
import {
  type DrivenThread,
  driveThread,
  effectCounts,
  startCommandModel,
} from "../e2e/split/support/thread-driver.ts";
import { startPostgresCluster } from "../setup/postgres-cluster.ts";
import { sandboxTestImage } from "./bench-stack.ts";

const THREADS = 10;
// AFFINITY_ROUNDS=30 makes it the 300-run soak (10 threads × 30 turns).
const ROUNDS = Number(process.env.AFFINITY_ROUNDS ?? 10);
const BOUND_MS = 900_000;

const image = await sandboxTestImage();
const suffix = randomBytes(4).toString("hex");
const nodeIds = [`aff-a-${suffix}`, `aff-b-${suffix}`];
const docker = new Docker();
const cluster = await startPostgresCluster();
const model = await startCommandModel();
const split = await startSplit({
  postgresAdminUrl: cluster.adminUrl,
  nodeIds,
  nodeTtlSeconds: 10,
  heartbeatSeconds: 1,
  sweepIntervalMs: 1_000,
  agentHostExtra: {
    SANDBOX_IMAGE: image,
    WORKER_CONCURRENCY: "2",
    SANDBOX_KEEP_WARM_SECONDS: "600",
    MODEL_BASE_URL: model.baseUrl,
    MODEL_NAME: "command-model",
  },
});
const sql = postgres(split.databaseUrl, { max: 4, onnotice: () => {} });
try {
  const deadline = performance.now() + BOUND_MS;
  const threads: DrivenThread[] = Array.from({ length: THREADS }, (_, index) => ({
    index,
    uid: `aff-${suffix}-${index}`,
    runs: [],
  }));
  await Promise.all(
    threads.map((driven) =>
      driveThread({ split, sql, driven, rounds: ROUNDS, sleepSeconds: 0, deadline }),
    ),
  );
  const runIds = threads.flatMap((t) => t.runs.map((r) => r.runId));
  const rows = await sql<
    {
      run_id: string;
      status: string;
      code: string | null;
      attempt: number;
      owner_node: string | null;
      wait_ms: number | null;
    }[]
  >`select run_id, status, error->>'code' as code, attempt, owner_node,
       extract(epoch from started_at - created_at) * 1000 as wait_ms
     from agent_runs where run_id = any(${runIds}::uuid[])`;
  const byId = new Map(rows.map((r) => [r.run_id, r]));
  const handBacks = rows.reduce((n, r) => n + Math.max(0, r.attempt - 1), 0);
  const limitFailures = rows.filter((r) => r.code === "hand_back_limit").length;
  const failed = rows.filter((r) => r.status !== "succeeded").length;
  let doubledOrLost = 0;
  for (const driven of threads) {
    const counts = await effectCounts(split, driven);
    for (const run of driven.runs) {
      const ran = counts.get(run.tag) ?? 0;
      if (byId.get(run.runId)?.status === "succeeded" ? ran !== 1 : ran > 1) doubledOrLost++;
    }
  }
  const moved: number[] = [];
  for (const driven of threads) {
    for (let i = 1; i < driven.runs.length; i++) {
      const prev = byId.get(driven.runs[i - 1]?.runId ?? "");
      const row = byId.get(driven.runs[i]?.runId ?? "");
      if (prev && row && row.owner_node !== prev.owner_node && row.wait_ms !== null) {
        moved.push(Number(row.wait_ms));
      }
    }
  }
  const waits = rows.filter((r) => r.wait_ms !== null).map((r) => Number(r.wait_ms));
  const pct = (values: number[], p: number) => {
    const sorted = [...values].sort((a, b) => a - b);
    return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;
  };
  const ms = (v: number) => `${Math.round(v)} ms`;
  const per100 = (handBacks / rows.length) * 100;
  console.log("\n## scope affinity: threads' turns back to back on two busy agent-hosts");
  console.log(
    `${rows.length} runs over ${THREADS} threads, 2 nodes × 2 slots, sandboxes kept warm; ${failed} not succeeded, ${limitFailures} hand_back_limit, ${doubledOrLost} lost or doubled effects`,
  );
  console.log(
    `submit → start, all runs: p50 ${ms(pct(waits, 50))}, p99 ${ms(pct(waits, 99))} (baseline)`,
  );
  console.log(
    moved.length === 0
      ? "submit → start, runs that moved node: none moved (every turn ran where its thread's sandbox was)"
      : `submit → start, runs that moved node (${moved.length}): p50 ${ms(pct(moved, 50))} = ${(pct(moved, 50) / pct(waits, 50)).toFixed(2)}× baseline, p99 ${ms(pct(moved, 99))}`,
  );
  console.log(
    `target affinity/hand-backs-per-100-runs: ${per100.toFixed(1)} <= 0 ${per100 <= 0 ? "met" : "MISSED"}`,
  );
} finally {
  await sql.end({ timeout: 5 });
  await split.stop();
  await model.close();
  for (const node of nodeIds) {
    const left = await docker.listContainers({
      all: true,
      filters: { label: [`${LABEL.nodeId}=${node}`] },
    });
    for (const c of left)
      await docker
        .getContainer(c.Id)
        .remove({ force: true })
        .catch(() => {});
  }
  await cluster.stop();
}
