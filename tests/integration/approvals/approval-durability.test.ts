import { eq } from "drizzle-orm";
import { afterEach, beforeEach, expect, it } from "vitest";
import { LABEL } from "../../../agent-host/sandbox/instance/container-labels.ts";
import { cancelRun } from "../../../functions/runs/cancel-run.ts";
import { agentRuns } from "../../../shared/db/schema.ts";
import { removeContainersLabelled } from "../../support/docker.ts";
import { expectGapFree, type RunWorld, runWorld, TEST_LIMITS } from "../runs/run-harness.ts";
import { startWorkerProcesses, type WorkerProcess } from "../runs/worker-process.ts";
import { registerNode } from "../sandbox/manager-fixture.ts";
import { uniqueNodeId } from "../sandbox/sandbox-fixture.ts";
import { approvalsOf, awaitPause, decide, EFFECT_COMMAND, effectCount } from "./approval-world.ts";

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

const ASK_BASH = { approvals: { tools: ["bash"] } };

// The split deployment: the agent-host that paused the run is killed (-9) while the run
// waits; a different agent-host, started afterwards, resumes it once a person approves.
it("kill -9 of the pausing agent-host: another node resumes and runs the call exactly once", async () => {
  otherNode = uniqueNodeId();
  await registerNode(world.db, otherNode);
  const limits = {
    ...TEST_LIMITS,
    concurrency: 1,
    waitingPollMs: 200,
    affinityWaitMs: 1_000,
    nodeTtlMs: 10 * 60_000,
  };
  const [first] = await startWorkerProcesses(world, [world.nodeId], limits, {
    keepWarmMs: 10 * 60_000,
  });
  if (first === undefined) throw new Error("no worker");
  const project = await world.project();
  const thread = await world.thread(project);
  const runId = await world.submit(thread, EFFECT_COMMAND, ASK_BASH);
  const approval = await awaitPause(world, runId);
  expect(effectCount(world, project)).toBe(0);
  await first.kill9();

  workers.push(...(await startWorkerProcesses(world, [otherNode], limits)));
  await decide(world, project.uid, approval, { decision: "approve", note: "ok" });
  const run = await world.waitForRun(runId, undefined, 60_000);
  expect(run).toMatchObject({ status: "succeeded", ownerNode: otherNode, attempt: 2 });
  expect(effectCount(world, project)).toBe(1);
  expectGapFree(await world.events(runId));
});

// docs/architecture.md §14: a waiting run holds no worker slot.
it("while a run awaits approval another user's run takes the node's one slot and completes", async () => {
  await world.worker({ limits: { concurrency: 1, waitingPollMs: 200 } });
  const mine = await world.project();
  const waiting = await world.submit(await world.thread(mine), EFFECT_COMMAND, ASK_BASH);
  const approval = await awaitPause(world, waiting);

  const theirs = await world.project({ uid: "someone-else" });
  const other = await world.submit(await world.thread(theirs), EFFECT_COMMAND);
  expect((await world.waitForRun(other)).status).toBe("succeeded");
  expect(effectCount(world, theirs)).toBe(1);
  expect((await world.run(waiting)).status).toBe("awaiting_approval");
  expect(effectCount(world, mine)).toBe(0);

  await decide(world, mine.uid, approval, { decision: "approve" });
  expect((await world.waitForRun(waiting)).status).toBe("succeeded");
  expect(effectCount(world, mine)).toBe(1);
});

it("duplicate deliveries of the resume run the approved call once", async () => {
  await world.worker();
  const project = await world.project();
  const runId = await world.submit(await world.thread(project), EFFECT_COMMAND, ASK_BASH);
  const approval = await awaitPause(world, runId);
  await decide(world, project.uid, approval, { decision: "approve" });
  await Promise.all([world.dispatch(runId), world.dispatch(runId), world.dispatch(runId)]);
  const run = await world.waitForRun(runId);
  expect(run).toMatchObject({ status: "succeeded", attempt: 2 });
  expect(effectCount(world, project)).toBe(1);
});

it("two decisions at once: one is recorded, the other is a conflict, the call runs once", async () => {
  await world.worker();
  const project = await world.project();
  const runId = await world.submit(await world.thread(project), EFFECT_COMMAND, ASK_BASH);
  const approval = await awaitPause(world, runId);
  const results = await Promise.allSettled([
    decide(world, project.uid, approval, { decision: "approve" }),
    decide(world, project.uid, approval, { decision: "deny", note: "no" }),
  ]);
  const won = results.filter((r) => r.status === "fulfilled");
  const lost = results.filter((r) => r.status === "rejected");
  expect(won).toHaveLength(1);
  expect(lost).toHaveLength(1);
  expect((lost[0] as PromiseRejectedResult).reason).toMatchObject({
    code: "conflict",
    details: { reason: "approval_decided" },
  });
  const decided = (won[0] as PromiseFulfilledResult<{ status: string }>).value.status;
  const run = await world.waitForRun(runId);
  expect(effectCount(world, project)).toBe(decided === "approved" ? 1 : 0);
  expect(run.status).toBe(decided === "approved" ? "succeeded" : "failed");
  const events = await world.events(runId);
  expect(events.filter((e) => e.type === "approval.resolved")).toHaveLength(1);
});

it("approve and cancel at once: the command runs at most once and the ending agrees", async () => {
  await world.worker();
  const project = await world.project();
  const runId = await world.submit(await world.thread(project), EFFECT_COMMAND, ASK_BASH);
  const approval = await awaitPause(world, runId);
  await Promise.allSettled([
    decide(world, project.uid, approval, { decision: "approve" }),
    cancelRun(world.db, project.uid, runId),
  ]);
  const run = await world.waitForRun(runId);
  const ran = effectCount(world, project);
  expect(ran).toBeLessThanOrEqual(1);
  if (run.status === "succeeded") expect(ran).toBe(1);
  else expect(run.status).toBe("cancelled");
  expect((await approvalsOf(world, runId)).filter((a) => a.status === "pending")).toEqual([]);
  expectGapFree(await world.events(runId));
});

it("cancel while awaiting ends the run at once and closes its approval", async () => {
  await world.worker();
  const project = await world.project();
  const runId = await world.submit(await world.thread(project), EFFECT_COMMAND, ASK_BASH);
  const approval = await awaitPause(world, runId);
  const { ended } = await cancelRun(world.db, project.uid, runId);
  expect(ended).toBe(true);
  const [row] = await world.db.select().from(agentRuns).where(eq(agentRuns.runId, runId));
  expect(row).toMatchObject({ status: "cancelled", cancelRequested: true });
  const [closed] = await approvalsOf(world, runId);
  expect(closed).toMatchObject({ status: "denied", decidedBy: project.uid });
  await expect(decide(world, project.uid, approval, { decision: "approve" })).rejects.toMatchObject(
    { code: "conflict" },
  );
  expect(effectCount(world, project)).toBe(0);
  expectGapFree(await world.events(runId));
});
