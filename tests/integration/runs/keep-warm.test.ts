import { eq } from "drizzle-orm";
import { afterEach, expect, it } from "vitest";
import { MAX_WARM_PER_UID } from "../../../agent-host/sandbox/lifecycle/sandbox-manager.ts";
import { sandboxes } from "../../../shared/db/schema.ts";
import { sandboxId as sandboxIdOf } from "../../../shared/identity/sandbox-id.ts";
import { pollFor } from "../../support/poll-until.ts";
import { containersOfNode } from "../sandbox/sandbox-fixture.ts";
import { type RunWorld, runWorld, UID } from "./run-harness.ts";

// The keep-warm window (docs/architecture.md §4.5): a root run's end releases its sandbox
// instead of destroying it, so the conversation's next turn reuses the generation; the
// idle reaper destroys it once released for the window, fenced like every destroy.

let world: RunWorld | undefined;
afterEach(async () => {
  await world?.cleanup();
  world = undefined;
});

async function sandboxRow(w: RunWorld, threadId: string) {
  const [row] = await w.db
    .select()
    .from(sandboxes)
    .where(eq(sandboxes.sandboxId, sandboxIdOf(UID, threadId)));
  return row;
}

/** Tree cleanup runs after the run's terminal write: wait for its release mark. */
async function waitReleased(w: RunWorld, threadId: string) {
  const row = await pollFor(
    () => sandboxRow(w, threadId),
    (r) => r?.state === "running" && r.releasedAt !== null,
    {
      what: "the sandbox's release",
      timeoutMs: 30_000,
      intervalMs: 20,
      detail: (r) => `${r?.state}`,
    },
  );
  if (row === undefined) throw new Error("sandbox row gone");
  return row;
}

it("the next turn within the window reuses the generation, /tmp included", async () => {
  const w = await runWorld({ keepWarmMs: 60_000 });
  world = w;
  await w.worker();
  const thread = await w.thread(await w.project());

  const first = await w.submit(thread, "echo one > /tmp/marker; echo first");
  expect((await w.waitForRun(first)).status).toBe("succeeded");
  const released = await waitReleased(w, thread);
  expect(await containersOfNode(w.docker, w.nodeId)).toHaveLength(1);

  const second = await w.submit(thread, "cat /tmp/marker");
  expect((await w.waitForRun(second)).status).toBe("succeeded");
  expect(await w.assistantMessages(thread)).toEqual(["first\n", "one\n"]);
  const after = await waitReleased(w, thread);
  expect(after.generation).toBe(released.generation);
  // Released again by the second turn's end, later than the first release.
  expect(after.releasedAt?.getTime()).toBeGreaterThanOrEqual(released.releasedAt?.getTime() ?? 0);

  // Still inside the window: the reaper leaves it alone.
  expect(await w.sandboxManager.reapIdle(AbortSignal.timeout(10_000))).toEqual([]);
  expect(await containersOfNode(w.docker, w.nodeId)).toHaveLength(1);
});

it("after the window the reaper destroys it and the next turn gets a new generation", async () => {
  const w = await runWorld({ keepWarmMs: 1 });
  world = w;
  await w.worker();
  const thread = await w.thread(await w.project());
  const first = await w.submit(thread, "echo one > /tmp/marker; echo first");
  expect((await w.waitForRun(first)).status).toBe("succeeded");
  const released = await waitReleased(w, thread);

  // A 1 ms window: the reaper's pass (repeated until the clock has moved past it) reaps.
  const id = sandboxIdOf(UID, thread);
  let reaped: string[] = [];
  for (let i = 0; i < 100 && !reaped.includes(id); i++) {
    reaped = await w.sandboxManager.reapIdle(AbortSignal.timeout(10_000));
  }
  expect(reaped).toEqual([id]);
  expect((await sandboxRow(w, thread))?.state).toBe("destroyed");
  await w.waitForNoContainers();

  const second = await w.submit(thread, "cat /tmp/marker 2>/dev/null || echo no-marker");
  expect((await w.waitForRun(second)).status).toBe("succeeded");
  expect(await w.assistantMessages(thread)).toEqual(["first\n", "no-marker\n"]);
  const next = await waitReleased(w, thread);
  expect(next.generation).toBeGreaterThan(released.generation);
});

it("a turn racing the reaper's destroy never executes in the destroyed generation", async () => {
  const w = await runWorld({ keepWarmMs: 1 });
  world = w;
  await w.worker();
  const thread = await w.thread(await w.project());
  const id = sandboxIdOf(UID, thread);
  let reapedRounds = 0;
  let reusedRounds = 0;
  for (let round = 0; round < 6; round++) {
    const warmup = await w.submit(thread, `echo round-${round}`);
    expect((await w.waitForRun(warmup)).status).toBe("succeeded");
    const released = await waitReleased(w, thread);

    // Real concurrency: the reaper's pass and the next turn start together.
    const [reaped, turn] = await Promise.all([
      w.sandboxManager.reapIdle(AbortSignal.timeout(20_000)),
      w.submit(thread, "echo alive").then((runId) => w.waitForRun(runId)),
    ]);
    expect(turn.status).toBe("succeeded");
    const after = await waitReleased(w, thread);
    if (reaped.includes(id)) {
      reapedRounds++;
      // The turn ran in a generation created after the reaped one, never in it.
      expect(after.generation).toBeGreaterThan(released.generation);
    } else {
      reusedRounds++;
      expect(after.generation).toBe(released.generation);
    }
    // Every other round starts from no sandbox at all (a cold turn after a reap).
    if (round % 2 === 1) {
      for (let i = 0; i < 100; i++) {
        if ((await w.sandboxManager.reapIdle(AbortSignal.timeout(10_000))).includes(id)) break;
      }
    }
  }
  expect(reapedRounds + reusedRounds).toBe(6);
  // Only a live generation has a container; every reaped one is gone.
  const live = (await sandboxRow(w, thread))?.state === "running" ? 1 : 0;
  expect(await containersOfNode(w.docker, w.nodeId)).toHaveLength(live);
});

// Issue 37 item 1: each warm generation pins its /tmp and home tmpfs for the window, and
// nothing bounded how many one user kept (four finished runs held 1.6 GB). Now a uid keeps
// its newest MAX_WARM_PER_UID warm on a node; keeping another evicts the oldest at once.
it("one user's finished runs keep at most MAX_WARM_PER_UID sandboxes warm, oldest evicted first; another user's warm sandbox is untouched", async () => {
  const w = await runWorld({ keepWarmMs: 60_000 });
  world = w;
  await w.worker();
  const rowOf = async (uid: string, threadId: string) =>
    (
      await w.db
        .select()
        .from(sandboxes)
        .where(eq(sandboxes.sandboxId, sandboxIdOf(uid, threadId)))
    )[0];
  const until = async (what: string, check: () => Promise<boolean>) => {
    const deadline = performance.now() + 60_000;
    while (!(await check())) {
      if (performance.now() > deadline) throw new Error(`timed out waiting until ${what}`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  };
  const warm = async (uid: string, thread: string) => {
    const row = await rowOf(uid, thread);
    return row?.state === "running" && row.releasedAt !== null;
  };

  const other = "warm-neighbour";
  const otherThread = await w.thread(await w.project({ uid: other }));
  expect((await w.waitForRun(await w.submit(otherThread, "echo n"))).status).toBe("succeeded");
  await until("the neighbour's sandbox is warm", () => warm(other, otherThread));

  const project = await w.project();
  const threads: string[] = [];
  for (let i = 0; i < MAX_WARM_PER_UID + 2; i++) {
    const thread = await w.thread(project);
    threads.push(thread);
    expect((await w.waitForRun(await w.submit(thread, `echo ${i}`))).status).toBe("succeeded");
    await until(`turn ${i}'s sandbox is warm`, () => warm(UID, thread));
  }
  const evicted = threads.slice(0, threads.length - MAX_WARM_PER_UID);
  const kept = threads.slice(-MAX_WARM_PER_UID);
  await until("the oldest warm sandboxes are destroyed", async () => {
    const states = await Promise.all(evicted.map(async (t) => (await rowOf(UID, t))?.state));
    return states.every((s) => s === "destroyed");
  });
  for (const t of kept) expect(await warm(UID, t)).toBe(true);
  expect(await warm(other, otherThread)).toBe(true);
  expect(await containersOfNode(w.docker, w.nodeId)).toHaveLength(MAX_WARM_PER_UID + 1);

  // An evicted conversation's next turn simply gets a new sandbox.
  const again = await w.submit(evicted[0] as string, "echo again");
  expect((await w.waitForRun(again)).status).toBe("succeeded");
});

it("over the node's warm memory budget the oldest warm sandbox of any user is evicted, and its conversation's next turn still runs", async () => {
  // Each warm sandbox counts at its tmpfs sizes (16 + 16 MiB in tests): room for two.
  const perSandbox = 32 * 1024 * 1024;
  const w = await runWorld({ keepWarmMs: 60_000, tmpfsBudgetBytes: 2.5 * perSandbox });
  world = w;
  await w.worker();
  const state = async (uid: string, thread: string) => {
    const [row] = await w.db
      .select()
      .from(sandboxes)
      .where(eq(sandboxes.sandboxId, sandboxIdOf(uid, thread)));
    return row?.state === "running" && row.releasedAt !== null ? "warm" : row?.state;
  };
  const until = async (what: string, check: () => Promise<boolean>) => {
    const deadline = performance.now() + 60_000;
    while (!(await check())) {
      if (performance.now() > deadline) throw new Error(`timed out waiting until ${what}`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  };

  const other = "warm-neighbour";
  const otherThread = await w.thread(await w.project({ uid: other }));
  expect((await w.waitForRun(await w.submit(otherThread, "echo n"))).status).toBe("succeeded");
  await until(
    "the neighbour's sandbox is warm",
    async () => (await state(other, otherThread)) === "warm",
  );

  const project = await w.project();
  const mine: string[] = [];
  for (let i = 0; i < 2; i++) {
    const thread = await w.thread(project);
    mine.push(thread);
    expect((await w.waitForRun(await w.submit(thread, `echo ${i}`))).status).toBe("succeeded");
  }
  await until("the neighbour's (oldest) warm sandbox is evicted", async () => {
    return (await state(other, otherThread)) === "destroyed";
  });
  for (const t of mine) expect(await state(UID, t)).toBe("warm");
  expect(await containersOfNode(w.docker, w.nodeId)).toHaveLength(2);
  const again = await w.submit(otherThread, "echo back");
  expect((await w.waitForRun(again)).status).toBe("succeeded");
});
