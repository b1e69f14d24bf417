import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Docker from "dockerode";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, inject, test } from "vitest";
import { LABEL } from "../../../agent-host/sandbox/instance/container-labels.ts";
import { mintDevToken } from "../../../infra/local/dev-token.ts";
import {
  type SplitDeployment,
  type SplitNode,
  startSplit,
} from "../../../infra/split/start-split.ts";
import { uidDirname } from "../../../shared/paths/uid-dirname.ts";
import type { ChatServer } from "../../integration/agent/chat-server.ts";
import { removeContainersLabelled } from "../../support/docker.ts";
import { type PausableProxy, startPausableProxy } from "../../support/pausable-proxy.ts";
import { postgresAdminUrl } from "../../support/postgres.ts";
import { driveAndLose } from "./support/drive-and-lose.ts";
import {
  awaitReadyz,
  completedEvent,
  containerIdsOf,
  expectEffectsAtMostOnce,
  liveSandboxRowsOf,
  runningOn,
  setNodeState,
  startDrive,
  unexplainedOf,
} from "./support/split-checks.ts";
import {
  awaitTerminal,
  type DrivenThread,
  driveThread,
  midToolRunsOn,
  startCommandModel,
  until,
} from "./support/thread-driver.ts";

// Issue 14: the split deployment of docs/deploy/split.md, brought up by infra/split/ (real
// Postgres, fauxqs, functions/entry/node.ts with its sweeper, two agent-host processes on
// one data root), once: node A's Docker goes away for a while (A reaches dockerd only
// through a socket proxy the test controls), then A is `kill -9`ed mid-run, then B gets
// SIGTERM. 50 runs across 10 threads for each loss, each run appending its own tag to a
// file in its Workdir.

const THREADS = 10;
const ROUNDS = 5;
const NODE_TTL_SECONDS = 6;
const SWEEP_INTERVAL_MS = 1_000;
/** What the sweep itself and a loaded 2-core machine add to "TTL + one sweep". */
const SWEEP_SLACK_MS = 10_000;
/** The whole drive of 50 runs: generous, a bound on a hang, not a measurement. */
const DRIVE_BOUND_MS = 600_000;
/** The kill happens once this many runs are terminal (so every thread has runs left). */
const KILL_AFTER_TERMINAL = 10;
/**
 * A's bound on one Docker call, longer than any wait below: a cancel or a freed slot seen
 * before it cannot be the work of that bound (a stop that waited on the engine would be
 * ended by it, far past the deadlines here).
 */
const A_DOCKER_CALL_TIMEOUT_SECONDS = 300;
/** How long A's Docker stays away (the fault itself, not a synchronisation). */
const OUTAGE_MS = 10_000;
/** Past the outage, by when every slot A had is free again: generous, far below A's bound. */
const AFTER_OUTAGE_BOUND_MS = 60_000;
/** WORKER_CONCURRENCY of each node. */
const SLOTS = 3;

const suffix = randomBytes(4).toString("hex");
const NODE_A = `split-a-${suffix}`;
const NODE_B = `split-b-${suffix}`;
const docker = new Docker();
let split: SplitDeployment;
let sql: postgres.Sql;
let model: ChatServer;
let socketDir: string;
/** Node A's only way to dockerd. */
let proxy: PausableProxy;

beforeAll(async () => {
  const image = inject("sandboxImage");
  if (!image) throw new Error(inject("dockerError") || "the sandbox image is missing");
  model = await startCommandModel();
  socketDir = await mkdtemp(join(tmpdir(), "workcell-split-docker-"));
  proxy = await startPausableProxy(
    { path: "/var/run/docker.sock" },
    { listenPath: join(socketDir, "a.sock") },
  );
  split = await startSplit({
    postgresAdminUrl: postgresAdminUrl(),
    nodeIds: [NODE_A, NODE_B],
    nodeTtlSeconds: NODE_TTL_SECONDS,
    heartbeatSeconds: 1,
    sweepIntervalMs: SWEEP_INTERVAL_MS,
    agentHostExtra: {
      SANDBOX_IMAGE: image,
      WORKER_CONCURRENCY: String(SLOTS),
      MODEL_BASE_URL: model.baseUrl,
      MODEL_NAME: "command-model",
    },
    nodeExtra: {
      [NODE_A]: {
        DOCKER_HOST: `unix://${proxy.path}`,
        DOCKER_CALL_TIMEOUT_SECONDS: String(A_DOCKER_CALL_TIMEOUT_SECONDS),
      },
    },
  });
  sql = postgres(split.databaseUrl, { max: 4, onnotice: () => {} });
}, 300_000);

afterAll(async () => {
  proxy?.resume();
  await sql?.end({ timeout: 5 });
  await split?.stop();
  await model?.close();
  await proxy?.close();
  if (socketDir) await rm(socketDir, { recursive: true, force: true });
  for (const node of [NODE_A, NODE_B]) {
    await removeContainersLabelled(docker, LABEL.nodeId, node);
  }
}, 120_000);

function node(id: string): SplitNode {
  const found = split.nodes.find((n) => n.nodeId === id);
  if (found === undefined) throw new Error(`no node ${id}`);
  return found;
}

/** driveAndLose on this file's deployment, with its sizes and bound. */
function driveAndLoseHere(p: {
  users: string;
  victim: SplitNode;
  lose: (victim: SplitNode) => Promise<void>;
}) {
  return driveAndLose({
    split,
    sql,
    docker,
    threads: THREADS,
    rounds: ROUNDS,
    lossAfterTerminal: KILL_AFTER_TERMINAL,
    boundMs: DRIVE_BOUND_MS,
    ...p,
  });
}

/** What a run A had when its Docker went may end with; every other run succeeds. */
const CUT_OFF_CODES = ["tool_interrupted", "sandbox_engine_unresponsive"];

describe("Docker unreachable for one agent-host only", () => {
  test("a cancel on A ends its run while A's engine hangs, A's runs end and its slots free within a bound of the outage, B serves throughout, A runs again with every slot, nothing of the outage is left", async () => {
    const [a, b] = [node(NODE_A), node(NODE_B)];
    const deadline = performance.now() + DRIVE_BOUND_MS;
    // A long command on A, to cancel during the outage: only A claims while it starts.
    await setNodeState(split, b, "quiesce", deadline);
    const long: DrivenThread = { index: 99, uid: `cancel-${suffix}`, runs: [] };
    const longDone = driveThread({
      split,
      sql,
      driven: long,
      rounds: 1,
      sleepSeconds: 600,
      deadline,
    });
    await until("the long run's command is under way on A", deadline, async () =>
      (await midToolRunsOn(sql, NODE_A)).includes(long.runs[0]?.runId ?? "none"),
    );
    const longRun = long.runs[0]?.runId as string;
    await setNodeState(split, b, "resume", deadline);

    const drive = startDrive({
      split,
      sql,
      users: `outage-${suffix}`,
      count: 6,
      rounds: 4,
      deadline,
    });
    await until("A runs a command of the drive", deadline, async () => {
      if (drive.state.failed !== undefined) throw drive.state.failed;
      const mid = (await midToolRunsOn(sql, NODE_A)).filter((id) => id !== longRun);
      return drive.terminal() >= 3 && mid.length > 0;
    });

    // The outage: first A's engine hangs (every byte held), then its socket goes away.
    proxy.pause();
    const outageAt = performance.now();
    const onA = new Set((await runningOn(sql, NODE_A)).filter((id) => id !== longRun));
    const token = await mintDevToken(split.devJwtSecret, long.uid);
    const cancel = await fetch(`${split.functionsUrl}/v1/runs/${longRun}/cancel`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}` },
      signal: AbortSignal.timeout(30_000),
    });
    expect(cancel.status).toBe(202);
    // Ended by the cancel while A's every Docker call still hangs: the stop waits on no
    // engine call (A's own bound is minutes away). The time is printed, not asserted.
    const cancelled = await awaitTerminal(sql, longRun, performance.now() + AFTER_OUTAGE_BOUND_MS);
    console.info(`cancel with A's engine hung took ${Math.round(performance.now() - outageAt)} ms`);
    expect(cancelled.status).toBe("cancelled");
    expect(await completedEvent(sql, longRun)).toMatchObject({ status: "cancelled" });
    expect(proxy.stopped).toBe(true);
    await longDone;

    proxy.cut();
    await awaitReadyz(a, 503, deadline);
    const servedByB = () =>
      drive.threads
        .flatMap((t) => t.runs)
        .filter((r) => r.end !== undefined && r.end.at > outageAt && r.end.ownerNode === NODE_B);
    await until("the outage has lasted its length and B served runs in it", deadline, () => {
      if (drive.state.failed !== undefined) throw drive.state.failed;
      return performance.now() - outageAt >= OUTAGE_MS && servedByB().length > 0;
    });
    // Whatever A claimed in the outage (before it noticed) counts as a slot it had.
    for (const id of await runningOn(sql, NODE_A)) onA.add(id);
    proxy.resume();
    const outageEnd = performance.now();

    // No slot of A hangs: each run it had is terminal or handed back, within the bound.
    await until(
      "A's runs of the outage to leave its slots",
      outageEnd + AFTER_OUTAGE_BOUND_MS,
      async () => {
        const still = new Set(await runningOn(sql, NODE_A));
        return [...onA].every((id) => !still.has(id));
      },
    );
    await awaitReadyz(a, 200, deadline);
    await drive.driving;
    const runs = drive.threads.flatMap((t) => t.runs);
    expect(runs).toHaveLength(6 * 4);
    const failed = runs.filter((r) => r.end?.status !== "succeeded");
    console.info(
      `outage: ${failed.length} of ${runs.length} runs cut off`,
      failed.map((r) => r.end),
    );
    for (const run of runs) {
      const end = run.end;
      const what = `${run.tag} ${run.runId} ${JSON.stringify(end)}`;
      // A run A took before or while it noticed the outage, cut off by it.
      const cutOff =
        end?.ownerNode === NODE_A && end.at >= outageAt && run.submittedAt <= outageEnd;
      if (end?.status === "failed" && cutOff) {
        expect(CUT_OFF_CODES, what).toContain(end.errorCode);
      } else {
        expect(end, what).toMatchObject({ status: "succeeded" });
      }
      // B was not affected: everything it took succeeded.
      if (end?.ownerNode === NODE_B) expect(end.status, what).toBe("succeeded");
    }
    await expectEffectsAtMostOnce(split, drive.threads);

    // A runs again, with every slot: SLOTS commands under way on A at once.
    await setNodeState(split, b, "quiesce", deadline);
    const after = startDrive({
      split,
      sql,
      users: `after-${suffix}`,
      count: SLOTS,
      rounds: 1,
      sleepSeconds: 8,
      deadline,
    });
    await until(`${SLOTS} commands under way on A at once`, deadline, async () => {
      if (after.state.failed !== undefined) throw after.state.failed;
      return (await midToolRunsOn(sql, NODE_A)).length === SLOTS;
    });
    await after.driving;
    for (const run of after.threads.flatMap((t) => t.runs)) {
      expect(run.end, run.tag).toMatchObject({ status: "succeeded", ownerNode: NODE_A });
    }
    await setNodeState(split, b, "resume", deadline);

    // Nothing of the outage is left on A: every container it has is a live sandbox
    // (kept warm for a next turn), no row is stuck mid-create or mid-destroy, and the
    // cancelled run's container, whose destroy the outage cut off, is gone.
    const longDir = uidDirname(long.uid);
    let left: Awaited<ReturnType<typeof unexplainedOf>> | undefined;
    await until("nothing of the outage left on A", deadline, async () => {
      left = await unexplainedOf(docker, sql, NODE_A);
      const longs = (await containerIdsOf(docker, NODE_A, { uidDirname: longDir })).length;
      return left.containers.length === 0 && left.rows.length === 0 && longs === 0;
    }).catch((error: unknown) => {
      throw new Error(`${(error as Error).message}: ${JSON.stringify(left)}`);
    });
  }, 900_000);
});

describe("kill -9 of one agent-host mid-run", () => {
  test("its runs end node_lost within TTL + one sweep, every thread goes on on the other node, effects at most once, its restart leaves none of its containers", async () => {
    const victim = node(NODE_A);
    const { threads, driving, lostAt, inFlight, containersAtLoss } = await driveAndLoseHere({
      users: `kill9-${suffix}`,
      victim,
      lose: (n) => n.kill9(),
    });
    expect(inFlight.length).toBeGreaterThan(0);
    expect(containersAtLoss.length).toBeGreaterThan(0);

    // Every run the dead node had: terminal within the node TTL plus one sweep.
    const bound = lostAt + NODE_TTL_SECONDS * 1000 + SWEEP_INTERVAL_MS + SWEEP_SLACK_MS;
    for (const runId of inFlight) {
      const row = await awaitTerminal(sql, runId, bound);
      expect(row).toMatchObject({ status: "failed", error: { code: "node_lost" } });
    }

    await driving;
    const runs = threads.flatMap((t) => t.runs);
    expect(runs).toHaveLength(THREADS * ROUNDS);
    for (const run of runs) {
      if (inFlight.includes(run.runId)) continue;
      expect(run.end, `${run.tag} ${run.runId}`).toMatchObject({ status: "succeeded" });
    }
    // Later runs of every thread succeed, on the surviving node.
    for (const driven of threads) {
      const later = driven.runs.filter((r) => r.submittedAt > lostAt);
      expect(later.length, `thread ${driven.index} had runs after the kill`).toBeGreaterThan(0);
      for (const run of later) {
        expect(run.end, run.tag).toMatchObject({ status: "succeeded", ownerNode: NODE_B });
      }
    }
    await expectEffectsAtMostOnce(split, threads);
    // The sweeper released every sandbox row of the lost node.
    expect(await liveSandboxRowsOf(sql, NODE_A)).toBe(0);

    // The node comes back: its reconciler removes what it still had (nothing is adopted).
    await victim.restart();
    await until(
      `${NODE_A}'s restart removed its containers`,
      performance.now() + 120_000,
      async () => {
        return (await containerIdsOf(docker, NODE_A)).length === 0;
      },
    );
    expect(
      (await containerIdsOf(docker, NODE_A)).filter((id) => containersAtLoss.includes(id)),
    ).toEqual([]);
  }, 900_000);
});

describe("SIGTERM of one agent-host mid-run", () => {
  test("it drains and exits cleanly, nothing points at it, every thread goes on on the other node, effects at most once", async () => {
    const victim = node(NODE_B);
    let exit: number | string = "not yet";
    let goneAt = Number.POSITIVE_INFINITY;
    const { threads, driving } = await driveAndLoseHere({
      users: `sigterm-${suffix}`,
      victim,
      lose: async (n) => {
        exit = await n.terminate();
        goneAt = performance.now();
      },
    });
    expect(exit).toBe(0);
    // A clean stop: no sandbox row and no container of the node remain, its row says stopped.
    expect(await liveSandboxRowsOf(sql, NODE_B)).toBe(0);
    expect(await containerIdsOf(docker, NODE_B), split.output().slice(-8000)).toEqual([]);
    const [row] = await sql<{ stopped_at: Date | null }[]>`
      select stopped_at from nodes where node_id = ${NODE_B}`;
    expect(row?.stopped_at).not.toBeNull();

    await driving;
    const runs = threads.flatMap((t) => t.runs);
    expect(runs).toHaveLength(THREADS * ROUNDS);
    for (const run of runs) {
      expect(run.end, `${run.tag} ${run.runId}`).toMatchObject({ status: "succeeded" });
    }
    // A run submitted as the signal was on its way may still be claimed by B before its
    // stop begins; B then finishes it in the drain (it succeeded, above). Once B is gone,
    // every thread goes on on A.
    for (const driven of threads) {
      const later = driven.runs.filter((r) => r.submittedAt > goneAt);
      expect(later.length, `thread ${driven.index} had runs after B exited`).toBeGreaterThan(0);
      for (const run of later) expect(run.end?.ownerNode, run.tag).toBe(NODE_A);
    }
    await expectEffectsAtMostOnce(split, threads);
  }, 900_000);
});
