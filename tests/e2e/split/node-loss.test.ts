import { randomBytes } from "node:crypto";
import Docker from "dockerode";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, inject, test } from "vitest";
import { LABEL } from "../../../agent-host/sandbox/container-labels.ts";
import {
  type SplitDeployment,
  type SplitNode,
  startSplit,
} from "../../../infra/split/start-split.ts";
import type { ChatServer } from "../../integration/agent/chat-server.ts";
import { removeContainersLabelled } from "../../support/docker.ts";
import { postgresAdminUrl } from "../../support/postgres.ts";
import {
  awaitTerminal,
  type DrivenThread,
  driveThread,
  effectCounts,
  midToolRunsOn,
  startCommandModel,
  until,
} from "./support/thread-driver.ts";

// Issue 14: the split deployment of docs/deploy/split.md, brought up by infra/split/ (real
// Postgres, fauxqs, functions/entry/node.ts with its sweeper, two agent-host processes on
// one data root), loses one node mid-run: by `kill -9`, then by SIGTERM. 50 runs across
// 10 threads each time, each run appending its own tag to a file in its Workdir.

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

const suffix = randomBytes(4).toString("hex");
const NODE_A = `split-a-${suffix}`;
const NODE_B = `split-b-${suffix}`;
const docker = new Docker();
let split: SplitDeployment;
let sql: postgres.Sql;
let model: ChatServer;

beforeAll(async () => {
  const image = inject("sandboxImage");
  if (!image) throw new Error(inject("dockerError") || "the sandbox image is missing");
  model = await startCommandModel();
  split = await startSplit({
    postgresAdminUrl: postgresAdminUrl(),
    nodeIds: [NODE_A, NODE_B],
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
  sql = postgres(split.databaseUrl, { max: 4, onnotice: () => {} });
}, 300_000);

afterAll(async () => {
  await sql?.end({ timeout: 5 });
  await split?.stop();
  await model?.close();
  for (const node of [NODE_A, NODE_B]) {
    await removeContainersLabelled(docker, LABEL.nodeId, node);
  }
}, 120_000);

function node(id: string): SplitNode {
  const found = split.nodes.find((n) => n.nodeId === id);
  if (found === undefined) throw new Error(`no node ${id}`);
  return found;
}

async function containerIdsOf(nodeId: string): Promise<string[]> {
  const found = await docker.listContainers({
    all: true,
    filters: { label: [`${LABEL.nodeId}=${nodeId}`] },
  });
  return found.map((c) => c.Id);
}

async function liveSandboxRowsOf(nodeId: string): Promise<number> {
  const [row] = await sql<{ n: number }[]>`
    select count(*)::int as n from sandboxes
    where node_id = ${nodeId} and state in ('creating', 'running', 'destroying')`;
  return row?.n ?? -1;
}

/**
 * Drives THREADS × ROUNDS runs; once KILL_AFTER_TERMINAL are terminal and `victim` is in
 * the middle of a command, calls `lose(victim)`. Returns the threads, the moment of the
 * loss and the runs that were running on the victim when it went.
 */
async function driveAndLose(p: {
  users: string;
  victim: SplitNode;
  lose: (victim: SplitNode) => Promise<void>;
}) {
  const deadline = performance.now() + DRIVE_BOUND_MS;
  const threads: DrivenThread[] = Array.from({ length: THREADS }, (_, index) => ({
    index,
    uid: `${p.users}-${index}`,
    runs: [],
  }));
  const driving = Promise.all(
    threads.map((driven) =>
      driveThread({ split, sql, driven, rounds: ROUNDS, sleepSeconds: 2, deadline }),
    ),
  );
  // A drive that fails (a run that never ends) must not leave the wait below hanging.
  let failed: unknown;
  driving.catch((error: unknown) => {
    failed = error;
  });
  const terminal = () => threads.flatMap((t) => t.runs).filter((r) => r.end !== undefined).length;
  await until(
    `${p.victim.nodeId} runs a command after ${KILL_AFTER_TERMINAL} runs`,
    deadline,
    async () => {
      if (failed !== undefined) throw failed;
      return (
        terminal() >= KILL_AFTER_TERMINAL && (await midToolRunsOn(sql, p.victim.nodeId)).length > 0
      );
    },
  );
  const containersAtLoss = await containerIdsOf(p.victim.nodeId);
  const lostAt = performance.now();
  await p.lose(p.victim);
  // The process is gone: what it had claimed is final now.
  const inFlight = (
    await sql<{ run_id: string }[]>`
      select run_id from agent_runs where status = 'running' and owner_node = ${p.victim.nodeId}`
  ).map((r) => r.run_id);
  return { threads, driving, lostAt, inFlight, containersAtLoss };
}

async function expectEffectsAtMostOnce(threads: DrivenThread[]) {
  for (const driven of threads) {
    const counts = await effectCounts(split, driven);
    for (const run of driven.runs) {
      const times = counts.get(run.tag) ?? 0;
      expect(times, `side effect of ${run.tag} (${run.end?.status})`).toBeLessThanOrEqual(1);
      if (run.end?.status === "succeeded") expect(times, run.tag).toBe(1);
    }
    // Every line is one of this thread's runs.
    const tags = new Set(driven.runs.map((r) => r.tag));
    expect([...counts.keys()].filter((line) => !tags.has(line))).toEqual([]);
  }
}

describe("kill -9 of one agent-host mid-run", () => {
  test("its runs end node_lost within TTL + one sweep, every thread goes on on the other node, effects at most once, its restart leaves none of its containers", async () => {
    const victim = node(NODE_A);
    const { threads, driving, lostAt, inFlight, containersAtLoss } = await driveAndLose({
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
    await expectEffectsAtMostOnce(threads);
    // The sweeper released every sandbox row of the lost node.
    expect(await liveSandboxRowsOf(NODE_A)).toBe(0);

    // The node comes back: its reconciler removes what it still had (nothing is adopted).
    await victim.restart();
    await until(
      `${NODE_A}'s restart removed its containers`,
      performance.now() + 120_000,
      async () => {
        return (await containerIdsOf(NODE_A)).length === 0;
      },
    );
    expect((await containerIdsOf(NODE_A)).filter((id) => containersAtLoss.includes(id))).toEqual(
      [],
    );
  }, 900_000);
});

describe("SIGTERM of one agent-host mid-run", () => {
  test("it drains and exits cleanly, nothing points at it, every thread goes on on the other node, effects at most once", async () => {
    const victim = node(NODE_B);
    let exit: number | string = "not yet";
    const { threads, driving, lostAt } = await driveAndLose({
      users: `sigterm-${suffix}`,
      victim,
      lose: async (n) => {
        exit = await n.terminate();
      },
    });
    expect(exit).toBe(0);
    // A clean stop: no sandbox row and no container of the node remain, its row says stopped.
    expect(await liveSandboxRowsOf(NODE_B)).toBe(0);
    expect(await containerIdsOf(NODE_B), split.output().slice(-8000)).toEqual([]);
    const [row] = await sql<{ stopped_at: Date | null }[]>`
      select stopped_at from nodes where node_id = ${NODE_B}`;
    expect(row?.stopped_at).not.toBeNull();

    await driving;
    const runs = threads.flatMap((t) => t.runs);
    expect(runs).toHaveLength(THREADS * ROUNDS);
    for (const run of runs) {
      expect(run.end, `${run.tag} ${run.runId}`).toMatchObject({ status: "succeeded" });
    }
    for (const driven of threads) {
      const later = driven.runs.filter((r) => r.submittedAt > lostAt);
      expect(later.length, `thread ${driven.index} had runs after the stop`).toBeGreaterThan(0);
      for (const run of later) expect(run.end?.ownerNode, run.tag).toBe(NODE_A);
    }
    await expectEffectsAtMostOnce(threads);
  }, 900_000);
});
