import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { and, eq, isNull } from "drizzle-orm";
import { afterEach, beforeEach, expect, it } from "vitest";
import { LABEL } from "../../../agent-host/sandbox/instance/container-labels.ts";
import { type AgentRun, agentRuns, userLimits } from "../../../shared/db/schema.ts";
import { uidDirname } from "../../../shared/paths/uid-dirname.ts";
import { removeContainersLabelled } from "../../support/docker.ts";
import { pollUntil } from "../../support/poll-until.ts";
import { registerNode } from "../sandbox/manager-fixture.ts";
import { uniqueNodeId } from "../sandbox/sandbox-fixture.ts";
import { type Project, type RunWorld, runWorld, TEST_LIMITS } from "./run-harness.ts";
import { startWorkerProcesses, type WorkerProcess } from "./worker-process.ts";

let world: RunWorld;
const workers: WorkerProcess[] = [];
let otherNode: string | undefined;

beforeEach(async () => {
  world = await runWorld();
});
afterEach(async () => {
  await Promise.all(workers.splice(0).map((w) => w.stop()));
  if (otherNode !== undefined) {
    await removeContainersLabelled(world.docker, LABEL.nodeId, otherNode);
    otherNode = undefined;
  }
  await world.cleanup();
});

const GATE = "fair-share-gate";
// A's runs hold their slot until the test opens the gate (a file in A's Workdir), so the
// order of events does not depend on how fast the machine is.
const GATED = `until [ -e ${GATE} ]; do sleep 0.05; done; echo a`;

function openGate(project: Project): void {
  const workdir = join(
    world.dataRoot.path,
    "users",
    uidDirname(project.uid),
    "workspace",
    project.workdirPath,
  );
  writeFileSync(join(workdir, GATE), "");
}

async function runsOf(uid: string): Promise<AgentRun[]> {
  return world.db.select().from(agentRuns).where(eq(agentRuns.uid, uid));
}

function waitUntil(what: string, check: () => Promise<boolean>, timeoutMs = 60_000) {
  return pollUntil(check, { what, timeoutMs, intervalMs: 50 });
}

const count = (runs: AgentRun[], status: string) => runs.filter((r) => r.status === status).length;
const waiting = (runs: AgentRun[]) =>
  runs.filter((r) => r.status === "pending" && r.waitingSince !== null).length;

/** Most runs of the list whose [started_at, finished_at] overlap at one instant. */
function maxOverlap(runs: AgentRun[]): number {
  const edges = runs.flatMap((r) => {
    if (r.startedAt === null || r.finishedAt === null) throw new Error(`${r.runId} did not run`);
    // An end sorts before a start at the same instant: a freed slot was taken.
    return [
      { at: r.startedAt.getTime(), delta: 1 },
      { at: r.finishedAt.getTime(), delta: -1 },
    ];
  });
  edges.sort((x, y) => x.at - y.at || x.delta - y.delta);
  let now = 0;
  let most = 0;
  for (const edge of edges) {
    now += edge.delta;
    most = Math.max(most, now);
  }
  return most;
}

// Each of A's runs in its own Workdir (projects/<id>) waiting for one gate beside them:
// runs on one Workdir would wait for each other's Execution Lease and lend their slots
// (decision 0141), and this test is about runs that really hold them.
const GATED_BESIDE = `until [ -e ../${GATE} ]; do sleep 0.05; done; echo a`;

function openGateBeside(project: Project): void {
  const projects = join(
    world.dataRoot.path,
    "users",
    uidDirname(project.uid),
    "workspace",
    "projects",
  );
  mkdirSync(projects, { recursive: true });
  writeFileSync(join(projects, GATE), "");
}

it("a new user's run starts while another user fills every slot of the node, not after one of their runs ends (issue 37 item 8)", async () => {
  const slots = 3;
  await world.worker({ limits: { concurrency: slots, waitingPollMs: 200 } });
  const projectA = await world.project({ uid: "tenant-a" });
  const projectB = await world.project({ uid: "tenant-b" });
  const threadB = await world.thread(projectB);

  const aRuns: string[] = [];
  for (let i = 0; i < 20; i++) {
    const thread = await world.thread(await world.project({ uid: "tenant-a" }));
    aRuns.push(await world.submit(thread, GATED_BESIDE));
  }
  // A holds every regular slot (its default limit, 4, is above this node's 3), the rest
  // wait; the node's idle-user slot (IDLE_UID_SLOTS) is not A's to take.
  const aFilled = async () => {
    const runs = await runsOf("tenant-a");
    return count(runs, "running") === slots && waiting(runs) === 20 - slots;
  };
  await waitUntil("A fills the slots and the rest of A's runs wait", aFilled);

  // B, with nothing running, starts and ends while every run of A still holds its slot
  // (the gate is closed: none of A's can end). Before, B waited for one of A's to end.
  const bRun = await world.submit(threadB, "echo b");
  const b = await world.waitForRun(bRun, undefined, 120_000);
  expect(b.status).toBe("succeeded");
  expect(await aFilled()).toBe(true);
  const bWaitMs = (b.startedAt?.getTime() ?? Number.NaN) - b.createdAt.getTime();
  console.info(`issue 37 item 8: B's run started ${bWaitMs} ms after its submission`);

  openGateBeside(projectA);
  const a = await Promise.all(aRuns.map((id) => world.waitForRun(id, undefined, 120_000)));
  expect(a.map((r) => r.status)).toEqual(aRuns.map(() => "succeeded"));
  // A never had more than the node's slots: the extra one is only for a uid with none.
  expect(maxOverlap(a)).toBeLessThanOrEqual(slots);
  // Every run ran once: waiting cost no attempt and no hand-back.
  expect([...a, b].map((r) => r.attempt)).toEqual([...a, b].map(() => 1));
}, 240_000);

it("max_concurrent_runs holds across two nodes: A waits at its limit, B is not delayed", async () => {
  otherNode = uniqueNodeId();
  await registerNode(world.db, otherNode);
  await world.db.insert(userLimits).values({ uid: "tenant-a", maxConcurrentRuns: 2 });
  workers.push(
    ...(await startWorkerProcesses(world, [world.nodeId, otherNode], {
      ...TEST_LIMITS,
      concurrency: 3,
      waitingPollMs: 200,
    })),
  );

  const projectA = await world.project({ uid: "tenant-a" });
  const projectB = await world.project({ uid: "tenant-b" });
  const aRuns: string[] = [];
  // Separate threads: separate sandboxes, so either node may take any of them.
  for (let i = 0; i < 8; i++) aRuns.push(await world.submit(await world.thread(projectA), GATED));
  await waitUntil("A runs at its limit and the rest wait", async () => {
    const runs = await runsOf("tenant-a");
    return count(runs, "running") === 2 && waiting(runs) === 6;
  });

  // Six slots, two used: B runs now, while A's six still wait.
  const bRun = await world.submit(await world.thread(projectB), "echo b");
  expect((await world.waitForRun(bRun, undefined, 60_000)).status).toBe("succeeded");
  const meanwhile = await runsOf("tenant-a");
  expect(count(meanwhile, "running")).toBe(2);
  expect(waiting(meanwhile)).toBe(6);

  openGate(projectA);
  const a = await Promise.all(aRuns.map((id) => world.waitForRun(id, undefined, 120_000)));
  expect(a.map((r) => r.status)).toEqual(aRuns.map(() => "succeeded"));
  // Never more than the limit at once, and not lost: each ran exactly once.
  expect(maxOverlap(a)).toBeLessThanOrEqual(2);
  expect(a.map((r) => r.attempt)).toEqual(aRuns.map(() => 1));
  // Nothing is left waiting.
  const left = await world.db
    .select({ runId: agentRuns.runId })
    .from(agentRuns)
    .where(and(eq(agentRuns.uid, "tenant-a"), isNull(agentRuns.finishedAt)));
  expect(left).toEqual([]);
}, 240_000);
