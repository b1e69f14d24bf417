import { eq } from "drizzle-orm";
import { afterEach, expect, it } from "vitest";
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
