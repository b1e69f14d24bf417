import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { eq } from "drizzle-orm";
import { afterEach, beforeEach, expect, it } from "vitest";
import { LABEL } from "../../../agent-host/sandbox/instance/container-labels.ts";
import { agentRuns, sandboxes } from "../../../shared/db/schema.ts";
import { sandboxId } from "../../../shared/identity/sandbox-id.ts";
import { uidDirname } from "../../../shared/paths/uid-dirname.ts";
import { removeContainersLabelled } from "../../support/docker.ts";
import { pollUntil } from "../../support/poll-until.ts";
import { registerNode } from "../sandbox/manager-fixture.ts";
import { uniqueNodeId } from "../sandbox/sandbox-fixture.ts";
import { type Project, type RunWorld, runWorld, TEST_LIMITS, UID } from "./run-harness.ts";
import { startWorkerProcesses, type WorkerProcess } from "./worker-process.ts";

// Issue 38 (3), decision 0113, on two agent-host processes against one database: a
// thread's sandbox is kept warm on node X, X's only slot is busy, node Y is free. The
// thread's next run is not claimed by Y and handed back in a loop: it waits for X for the
// affinity wait, then Y takes it, the warm sandbox is given up, and it runs fresh on Y.
// Every run is claimed exactly once (attempt 1): no hand-back at all.

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

const GATE = "affinity-gate";
// Holds its slot until the test opens the gate (a file in its project's Workdir).
const GATED = `until [ -e ${GATE} ]; do sleep 0.05; done; echo held`;
function openGate(project: Project): void {
  const root = join(world.dataRoot.path, "users", uidDirname(project.uid), "workspace");
  writeFileSync(join(root, project.workdirPath, GATE), "");
}
async function runRow(runId: string) {
  const [row] = await world.db.select().from(agentRuns).where(eq(agentRuns.runId, runId));
  if (row === undefined) throw new Error(`no run ${runId}`);
  return row;
}

it("the owner's slots busy: the run waits out the affinity bound, then starts fresh on the free node, never handed back", async () => {
  otherNode = uniqueNodeId();
  await registerNode(world.db, otherNode);
  workers.push(
    ...(await startWorkerProcesses(
      world,
      [world.nodeId, otherNode],
      {
        ...TEST_LIMITS,
        concurrency: 1,
        waitingPollMs: 200,
        affinityWaitMs: 2_000,
        // The node rows' heartbeats do not move in this fixture; both nodes are alive.
        nodeTtlMs: 10 * 60_000,
      },
      { keepWarmMs: 10 * 60_000 },
    )),
  );
  const project = await world.project();
  const thread = await world.thread(project);
  const first = await world.submit(thread, "echo first > first.txt");
  expect((await world.waitForRun(first, undefined, 60_000)).status).toBe("succeeded");
  const owner = (await runRow(first)).ownerNode;
  const scope = sandboxId(UID, thread);
  const [warm] = await world.db.select().from(sandboxes).where(eq(sandboxes.sandboxId, scope));
  expect(warm).toMatchObject({ state: "running", nodeId: owner });
  expect(warm?.releasedAt).not.toBeNull();

  // Both slots busy (one gated run each, own projects so each gate opens alone).
  const gated = [await world.project(), await world.project()];
  const gatedRuns = await Promise.all(
    gated.map(async (p) => world.submit(await world.thread(p), GATED)),
  );
  await pollUntil(
    async () => (await Promise.all(gatedRuns.map(runRow))).every((r) => r.status === "running"),
    60_000,
  );
  // Running is the claim; the gate's Workdir exists once the command has started.
  await Promise.all(gatedRuns.map((id) => world.waitForEvent(id, "tool.started", 60_000)));
  const second = await world.submit(thread, "echo second > second.txt");
  // Free the node that does not hold the warm sandbox; the owner stays busy.
  const onFree = (await Promise.all(gatedRuns.map(runRow))).findIndex((r) => r.ownerNode !== owner);
  const onOwner = 1 - onFree;
  openGate(gated[onFree] as Project);

  const run = await world.waitForRun(second, undefined, 60_000);
  expect(run.status).toBe("succeeded");
  expect(run.attempt).toBe(1);
  expect(run.ownerNode).not.toBe(owner);
  // The owner was busy the whole time: its gated run is still running.
  expect((await runRow(gatedRuns[onOwner] as string)).status).toBe("running");
  const [fresh] = await world.db.select().from(sandboxes).where(eq(sandboxes.sandboxId, scope));
  expect(fresh?.nodeId).toBe(run.ownerNode);
  expect(fresh?.generation).not.toBe(warm?.generation);

  openGate(gated[onOwner] as Project);
  const all = await Promise.all(
    [first, ...gatedRuns, second].map((id) => world.waitForRun(id, undefined, 60_000)),
  );
  expect(all.map((r) => r.status)).toEqual(all.map(() => "succeeded"));
  // Claimed once each: zero hand-backs, so zero hand_back_limit failures.
  expect(all.map((r) => r.attempt)).toEqual(all.map(() => 1));
}, 240_000);
