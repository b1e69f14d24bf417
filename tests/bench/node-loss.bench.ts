// Issue 14: on the split deployment (infra/split/: two agent-host processes, the control
// plane with its sweeper), the time from `kill -9` of a node to the last of its runs being
// terminal, and to the next run of an affected thread succeeding on the other node,
// printed against the node TTL (the configured bound: TTL + one sweep) and against a
// run's own latency before the kill, both measured in this run.
import { randomBytes } from "node:crypto";
import Docker from "dockerode";
import postgres from "postgres";
import { LABEL } from "../../agent-host/sandbox/instance/container-labels.ts";
import { startSplit } from "../../infra/split/start-split.ts";
import {
  awaitTerminal,
  type DrivenThread,
  driveThread,
  midToolRunsOn,
  startCommandModel,
  until,
} from "../e2e/split/support/thread-driver.ts";
import { startPostgresCluster } from "../setup/postgres-cluster.ts";
import { sandboxTestImage } from "./bench-stack.ts";
import { benchTargets } from "./measure.ts";

const THREADS = 6;
const ROUNDS = 4;
const NODE_TTL_SECONDS = 6;
const SWEEP_INTERVAL_MS = 1_000;
const BOUND_MS = 600_000;
// The bound: the node TTL plus one sweep, as a multiple of the TTL.
const targets = benchTargets("node-loss", [
  {
    measure: "last-run-terminal-vs-ttl",
    op: "<=",
    target: Number(
      ((NODE_TTL_SECONDS * 1000 + SWEEP_INTERVAL_MS) / (NODE_TTL_SECONDS * 1000)).toFixed(2),
    ),
  },
]);

const image = await sandboxTestImage();
const suffix = randomBytes(4).toString("hex");
const [A, B] = [`bench-a-${suffix}`, `bench-b-${suffix}`];
const docker = new Docker();
const cluster = await startPostgresCluster();
const model = await startCommandModel();
const split = await startSplit({
  postgresAdminUrl: cluster.adminUrl,
  nodeIds: [A, B],
  nodeTtlSeconds: NODE_TTL_SECONDS,
  heartbeatSeconds: 1,
  sweepIntervalMs: SWEEP_INTERVAL_MS,
  agentHostExtra: {
    SANDBOX_IMAGE: image,
    WORKER_CONCURRENCY: "3",
    MODEL_BASE_URL: model.baseUrl,
    MODEL_NAME: "command-model",
  },
});
const sql = postgres(split.databaseUrl, { max: 4, onnotice: () => {} });
try {
  const deadline = performance.now() + BOUND_MS;
  const threads: DrivenThread[] = Array.from({ length: THREADS }, (_, index) => ({
    index,
    uid: `bench-${suffix}-${index}`,
    runs: [],
  }));
  const driving = Promise.all(
    threads.map((driven) =>
      driveThread({ split, sql, driven, rounds: ROUNDS, sleepSeconds: 2, deadline }),
    ),
  );
  const victim = split.nodes.find((n) => n.nodeId === A);
  if (victim === undefined) throw new Error("no node A");
  await until("node A runs a command after one round", deadline, async () => {
    const done = threads.flatMap((t) => t.runs).filter((r) => r.end !== undefined).length;
    return done >= THREADS && (await midToolRunsOn(sql, A)).length > 0;
  });
  const lostAt = performance.now();
  await victim.kill9();
  const inFlight = (
    await sql<{ run_id: string }[]>`
      select run_id from agent_runs where status = 'running' and owner_node = ${A}`
  ).map((r) => r.run_id);
  let lastTerminal = 0;
  for (const runId of inFlight) {
    await awaitTerminal(sql, runId, deadline);
    lastTerminal = Math.max(lastTerminal, performance.now() - lostAt);
  }
  await driving;

  const runs = threads.flatMap((t) => t.runs);
  const before = runs
    .filter((r) => r.end !== undefined && r.end.at < lostAt && r.end.status === "succeeded")
    .map((r) => (r.end?.at ?? 0) - r.submittedAt)
    .sort((a, b) => a - b);
  const runLatency = before[Math.floor(before.length / 2)] ?? Number.NaN;
  // The affected threads' next runs: the run after each killed one.
  const nextOk: number[] = [];
  for (const driven of threads) {
    const i = driven.runs.findIndex((r) => inFlight.includes(r.runId));
    const next = i < 0 ? undefined : driven.runs[i + 1];
    if (next?.end?.status === "succeeded") nextOk.push(next.end.at - lostAt);
  }
  const nextSucceeded = Math.max(...nextOk);
  const ttl = NODE_TTL_SECONDS * 1000;
  const ms = (v: number) => `${(v / 1000).toFixed(2)} s`;
  console.log("\n## kill -9 of one of two agent-hosts (split deployment)");
  console.log(
    `node TTL ${ms(ttl)}, sweep ${ms(SWEEP_INTERVAL_MS)}, heartbeat 1 s; ${inFlight.length} runs in flight on the killed node; ${runs.length} runs over ${THREADS} threads`,
  );
  console.log(
    `baseline: median run latency before the kill (submit → succeeded) ${ms(runLatency)}`,
  );
  console.log(
    `kill → last of its runs terminal        ${ms(lastTerminal)}  = ${(lastTerminal / ttl).toFixed(2)}× TTL  (bound TTL + sweep = ${((ttl + SWEEP_INTERVAL_MS) / ttl).toFixed(2)}× TTL)`,
  );
  targets.record("last-run-terminal-vs-ttl", lastTerminal / ttl);
  console.log(
    `kill → next run of an affected thread ok ${ms(nextSucceeded)}  = ${(nextSucceeded / ttl).toFixed(2)}× TTL  = ${(nextSucceeded / runLatency).toFixed(2)}× run latency  (${nextOk.length} threads)`,
  );
} finally {
  await sql.end({ timeout: 5 });
  await split.stop();
  await model.close();
  for (const node of [A, B]) {
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
