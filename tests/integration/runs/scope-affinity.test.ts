import { randomUUID } from "node:crypto";
import { eq, sql } from "drizzle-orm";
import { afterEach, beforeEach, expect, it } from "vitest";
import { sandboxes } from "../../../shared/db/schema.ts";
import { sandboxId } from "../../../shared/identity/sandbox-id.ts";
import { registerNode } from "../sandbox/manager-fixture.ts";
import { type RunWorld, runWorld, UID } from "./run-harness.ts";

// Issue 38 (3), decision 0113: a waiting run whose scope's sandbox runs on another live
// node is left to that node (not claimed here and handed back every few seconds until
// `hand_back_limit`); once that sandbox is only kept warm and the affinity wait has
// passed, this node claims the run and the warm sandbox is given up: the run starts fresh
// here, claimed once.

let world: RunWorld;
const AFFINITY_WAIT_MS = 1_500;

beforeEach(async () => {
  world = await runWorld();
  await world.worker({
    limits: {
      affinityWaitMs: AFFINITY_WAIT_MS,
      // The other node below is a row whose heartbeat does not move: alive for the test.
      nodeTtlMs: 10 * 60_000,
      waitingPollMs: 200,
    },
  });
});
afterEach(async () => {
  await world.cleanup();
});

/** A thread whose scope's sandbox is `running` on another (live) node. */
async function threadWithSandboxElsewhere(inUse: boolean) {
  const project = await world.project();
  const thread = await world.thread(project);
  const other = `other-${randomUUID()}`;
  await registerNode(world.db, other);
  await world.db.insert(sandboxes).values({
    sandboxId: sandboxId(UID, thread),
    uid: UID,
    runtimeScopeId: thread,
    workdirPath: project.workdirPath,
    nodeId: other,
    state: "running",
    instanceId: "container-on-the-other-node",
    ...(inUse ? {} : { releasedAt: sql`now()` }),
  });
  return { project, thread, other };
}

it("a run whose sandbox is in use on another live node waits for it, never claimed nor handed back; once kept warm past the wait it runs here, fresh", async () => {
  const { thread, other } = await threadWithSandboxElsewhere(true);
  const waiting = await world.submit(thread, "echo affinity > out.txt");
  // A later run of the same user on a free scope: the fill that claims it looked at the
  // waiting one first (older, same user) and left it.
  const free = await world.thread(await world.project());
  const later = await world.submit(free, "echo free");
  expect((await world.waitForRun(later)).status).toBe("succeeded");
  expect(await world.run(waiting)).toMatchObject({ status: "pending", attempt: 0 });

  // The other node's run ends: its sandbox is kept warm there, no run uses it.
  await world.db
    .update(sandboxes)
    .set({ releasedAt: sql`now()` })
    .where(eq(sandboxes.sandboxId, sandboxId(UID, thread)));
  const run = await world.waitForRun(waiting);
  // Claimed once: never handed back.
  expect(run).toMatchObject({ status: "succeeded", attempt: 1, ownerNode: world.nodeId });
  const [row] = await world.db
    .select()
    .from(sandboxes)
    .where(eq(sandboxes.sandboxId, sandboxId(UID, thread)));
  expect(row?.nodeId).toBe(world.nodeId);
  expect(row?.nodeId).not.toBe(other);
  const events = await world.events(waiting);
  expect(events.map((e) => e.type)).toContain("tool.completed");
});

it("a run whose sandbox is only kept warm on another live node is not claimed before the wait, then starts fresh here", async () => {
  const { thread } = await threadWithSandboxElsewhere(false);
  const runId = await world.submit(thread, "echo warm-elsewhere");
  const run = await world.waitForRun(runId);
  expect(run).toMatchObject({ status: "succeeded", attempt: 1 });
  // Not claimed before the wait (the database's clock on both ends): the bound holds.
  const [times] = await world.database.sql<{ waited_ms: number }[]>`
    select extract(epoch from started_at - created_at) * 1000 as waited_ms
    from agent_runs where run_id = ${runId}`;
  expect(Number(times?.waited_ms)).toBeGreaterThanOrEqual(AFFINITY_WAIT_MS - 50);
});
