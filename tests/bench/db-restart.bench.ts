// Issue 38 (1)(2), decisions 0111/0112: PostgreSQL "restarted" under load on the split
// deployment (infra/split: the control plane, its sweeper and two agent-hosts all reach
// the database through one proxy, which drops every connection and refuses new ones for
// OUTAGE_MS, then lets them in again: what a restart looks like to a client), RESTARTS
// times, each while runs of every thread are mid-command. Printed: agent-host exits (the
// target is none), runs that did not succeed, effects lost or doubled, and the runs'
// submit → end p50 against the same runs' p50 with no outage in this run (baseline).
import { randomBytes } from "node:crypto";
import Docker from "dockerode";
import postgres from "postgres";
import { LABEL } from "../../agent-host/sandbox/instance/container-labels.ts";
import { startSplit } from "../../infra/split/start-split.ts";
import {
  type DrivenThread,
  driveThread,
  effectCounts,
  midToolRunsOn,
  startCommandModel,
  until,
} from "../e2e/split/support/thread-driver.ts";
import { startPostgresCluster } from "../setup/postgres-cluster.ts";
import { startPausableProxy } from "../support/pausable-proxy.ts";
import { sandboxTestImage } from "./bench-stack.ts";

const THREADS = 6;
const RESTARTS = 10;
const OUTAGE_MS = 3_000;
const BOUND_MS = 1_200_000;

const image = await sandboxTestImage();
const suffix = randomBytes(4).toString("hex");
const nodeIds = [`pg-a-${suffix}`, `pg-b-${suffix}`];
const docker = new Docker();
const cluster = await startPostgresCluster();
const direct = new URL(cluster.adminUrl);
const proxy = await startPausableProxy({ host: direct.hostname, port: Number(direct.port) });
const viaProxy = new URL(cluster.adminUrl);
viaProxy.port = String(proxy.port);
const model = await startCommandModel();
const split = await startSplit({
  postgresAdminUrl: viaProxy.toString(),
  nodeIds,
  nodeTtlSeconds: 30,
  heartbeatSeconds: 2,
  sweepIntervalMs: 2_000,
  agentHostExtra: {
    SANDBOX_IMAGE: image,
    WORKER_CONCURRENCY: "3",
    MODEL_BASE_URL: model.baseUrl,
    MODEL_NAME: "command-model",
  },
});
// The bench watches the database directly, never through the proxy it cuts.
const watchUrl = new URL(split.databaseUrl);
watchUrl.port = direct.port;
const sql = postgres(watchUrl.toString(), { max: 4, onnotice: () => {} });
const exits: string[] = [];
// Exits once the bench stops the deployment are its own doing, not counted.
let stopping = false;
for (const node of split.nodes) {
  void node.process?.exited.then((code) => {
    if (stopping) return;
    exits.push(`${node.nodeId} exited ${code}`);
    // What it said last (the guard logs a fatal line with the error before exiting).
    const said = split
      .output()
      .split("\n")
      .filter((l) => /fatal|uncaught|Error/i.test(l));
    console.error(
      `${node.nodeId} exited ${code}; its last error lines:\n${said.slice(-15).join("\n")}`,
    );
  });
}
try {
  const deadline = performance.now() + BOUND_MS;
  const threads: DrivenThread[] = Array.from({ length: THREADS }, (_, index) => ({
    index,
    uid: `pg-${suffix}-${index}`,
    runs: [],
  }));
  // A submission the API refused or did not answer is counted, not fatal: the outage
  // may be in its way (the next round submits again).
  const submitFailures: string[] = [];
  const round = (sleepSeconds: number) =>
    Promise.all(
      threads.map((driven) =>
        driveThread({ split, sql, driven, rounds: 1, sleepSeconds, deadline }).catch(
          (error: unknown) => {
            submitFailures.push(String(error).slice(0, 200));
          },
        ),
      ),
    );
  // Baseline: one quiet round of the same runs.
  const quietStart = threads.map((t) => t.runs.length);
  await round(2);
  for (let i = 0; i < RESTARTS; i++) {
    const failuresBefore = submitFailures.length;
    const driving = round(2);
    await until("one run mid-command", deadline, async () => {
      const mid = (await Promise.all(nodeIds.map((n) => midToolRunsOn(sql, n)))).flat();
      return mid.length > 0 || submitFailures.length > failuresBefore;
    });
    proxy.cut();
    await new Promise((resolve) => setTimeout(resolve, OUTAGE_MS));
    proxy.resume();
    await driving;
  }

  const runs = threads.flatMap((t) => t.runs);
  const quiet = threads.flatMap((t, k) => t.runs.slice(quietStart[k], (quietStart[k] ?? 0) + 1));
  const outage = runs.filter((r) => !quiet.includes(r));
  const latency = (rs: typeof runs) => {
    const v = rs.map((r) => (r.end?.at ?? Number.NaN) - r.submittedAt).sort((a, b) => a - b);
    return v[Math.floor(v.length / 2)] ?? Number.NaN;
  };
  const notSucceeded = runs.filter((r) => r.end?.status !== "succeeded");
  let doubledOrLost = 0;
  for (const driven of threads) {
    const counts = await effectCounts(split, driven);
    for (const run of driven.runs) {
      const ran = counts.get(run.tag) ?? 0;
      if (run.end?.status === "succeeded" ? ran !== 1 : ran > 1) doubledOrLost++;
    }
  }
  const codes = notSucceeded.map((r) => r.end?.errorCode ?? r.end?.status).join(", ");
  // What is known of each failure: its message, and what the nodes logged about the run.
  const logLines = split.output().split("\n");
  for (const run of notSucceeded) {
    const [row] = await sql<{ error: { message?: string } | null }[]>`
      select error from agent_runs where run_id = ${run.runId}`;
    const said = logLines.filter((l) => l.includes(run.runId) && /"level":(?:40|50|60)/.test(l));
    console.error(
      `run ${run.runId} (${run.end?.errorCode}): ${row?.error?.message ?? "?"}\n${said.slice(-6).join("\n").slice(0, 3000)}`,
    );
  }
  const s = (ms: number) => `${(ms / 1000).toFixed(2)} s`;
  console.log("\n## PostgreSQL dropped for 3 s under load, 10 times (split deployment)");
  console.log(
    `${runs.length} runs over ${THREADS} threads, 2 agent-hosts × 3 slots; ${RESTARTS} outages of ${OUTAGE_MS} ms, each with runs mid-command`,
  );
  console.log(
    `submissions failed: ${submitFailures.length}${submitFailures.length > 0 ? ` (${submitFailures.join(" | ")})` : ""}`,
  );
  console.log(
    `agent-host exits: ${exits.length}${exits.length > 0 ? ` (${exits.join("; ")})` : ""}; not succeeded: ${notSucceeded.length}${codes ? ` (${codes})` : ""}; effects lost or doubled: ${doubledOrLost}`,
  );
  console.log(
    `submit → end p50: quiet ${s(latency(quiet))} (baseline), through an outage ${s(latency(outage))} = ${(latency(outage) / latency(quiet)).toFixed(2)}×`,
  );
  console.log(
    `target db-restart/agent-host-exits: ${exits.length} <= 0 ${exits.length === 0 ? "met" : "MISSED"}`,
  );
  console.log(
    `target db-restart/runs-not-succeeded: ${notSucceeded.length} <= 0 ${notSucceeded.length === 0 ? "met" : "MISSED"}`,
  );
} catch (error) {
  console.error(split.output().slice(-4000));
  throw error;
} finally {
  stopping = true;
  await sql.end({ timeout: 5 });
  await split.stop();
  await model.close();
  await proxy.close();
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
