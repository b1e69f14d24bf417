import { randomUUID } from "node:crypto";
import { eq, sql } from "drizzle-orm";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { finishRun } from "../../../agent-host/runs/claim/finish-run.ts";
import { appendFencedEvent } from "../../../agent-host/runs/claim/run-event-log.ts";
import { releaseClaim } from "../../../agent-host/runs/index.ts";
import { agentRuns, sandboxes } from "../../../shared/db/schema.ts";
import { sandboxId } from "../../../shared/identity/sandbox-id.ts";
import { failExpiredLeases } from "../../../shared/runs/fail-expired-leases.ts";
import { claimParkedRun } from "../../support/claim-parked-run.ts";
import { processesInSandbox } from "./processes-in-sandbox.ts";
import { expectGapFree, type RunWorld, runWorld, UID } from "./run-harness.ts";

let world: RunWorld;

beforeEach(async () => {
  world = await runWorld();
});
afterEach(async () => {
  await world.cleanup();
});

const FAR_FUTURE = new Date(Date.now() + 3_600_000);

/** A thread with a committed run, claimed as a worker of this node would. */
async function claimed() {
  const thread = await world.thread(await world.project());
  const runId = await world.commitRun(thread, "task");
  const claim = await claimParkedRun(world.db, { runId, nodeId: world.nodeId, leaseTtlMs: 60_000 });
  if (!claim.ok) throw new Error("claim failed");
  return { thread, runId, fence: claim.fence };
}

async function runningSandboxRow(thread: string, generation: number) {
  await world.db.insert(sandboxes).values({
    sandboxId: sandboxId(UID, thread),
    uid: UID,
    runtimeScopeId: thread,
    workdirPath: "projects/00000000-0000-4000-8000-000000000000",
    generation,
    nodeId: world.nodeId,
    state: "running",
    instanceId: `c-${generation}`,
  });
}

describe("claim", () => {
  it("exactly one of many concurrent claims wins, with attempt 1", async () => {
    const thread = await world.thread(await world.project());
    const runId = await world.commitRun(thread, "task");
    const outcomes = await Promise.all(
      Array.from({ length: 16 }, () =>
        claimParkedRun(world.db, { runId, nodeId: world.nodeId, leaseTtlMs: 60_000 }),
      ),
    );
    expect(outcomes.filter((o) => o.ok)).toHaveLength(1);
    // The others found nothing left to claim, or lost the race for the one candidate.
    expect(
      outcomes.filter((o) => !o.ok && (o.reason === "none" || o.reason === "contended")),
    ).toHaveLength(15);
    expect(await world.run(runId)).toMatchObject({ status: "running", attempt: 1 });
    expect(
      await claimParkedRun(world.db, { runId: randomUUID(), nodeId: world.nodeId, leaseTtlMs: 1 }),
    ).toEqual({ ok: false, reason: "none" });
  });

  it("a handed-back run can be claimed again, and the old claim's fence is dead", async () => {
    const { runId, fence } = await claimed();
    expect(await releaseClaim(world.db, fence)).toBe(true);
    expect(await world.run(runId)).toMatchObject({ status: "pending", ownerNode: null });
    const again = await claimParkedRun(world.db, {
      runId,
      nodeId: world.nodeId,
      leaseTtlMs: 60_000,
    });
    expect(again.ok && again.fence.attempt).toBe(2);
    expect(await appendFencedEvent(world.db, fence, 1, { type: "run.status", data: {} })).toBe(
      false,
    );
  });
});

describe("failExpiredLeases", () => {
  it("ends expired runs node_lost after their events, releases the sandbox, and fences the old worker", async () => {
    const { thread, runId, fence } = await claimed();
    for (const seq of [1, 2]) {
      expect(
        await appendFencedEvent(world.db, fence, seq, {
          type: "message.delta",
          data: { text: "x" },
        }),
      ).toBe(true);
    }
    await runningSandboxRow(thread, 7);

    const swept = await failExpiredLeases(world.db, FAR_FUTURE);
    expect(swept).toEqual([
      {
        uid: UID,
        runtimeScopeId: thread,
        sandboxId: sandboxId(UID, thread),
        runIds: [runId],
        releasedSandbox: { generation: 7, nodeId: world.nodeId },
      },
    ]);
    const run = await world.run(runId);
    expect(run).toMatchObject({ status: "failed", error: { code: "node_lost" } });
    expect(run.finishedAt).not.toBeNull();
    const events = await world.events(runId);
    expectGapFree(events);
    expect(events).toHaveLength(3);
    const [row] = await world.db
      .select()
      .from(sandboxes)
      .where(eq(sandboxes.sandboxId, sandboxId(UID, thread)));
    expect(row?.state).toBe("failed");

    // The worker that was only slow writes nothing more.
    expect(await appendFencedEvent(world.db, fence, 3, { type: "message.delta", data: {} })).toBe(
      false,
    );
    expect(
      await finishRun(world.db, fence, thread, 3, { status: "succeeded", finalText: "late" }),
    ).toBe(false);
    expect(await world.run(runId)).toMatchObject({ status: "failed" });
    expect(await world.assistantMessages(thread)).toEqual([]);
  });

  it("the node_lost message says what the run's events show of its commands (issue 38)", async () => {
    const nothing = await claimed();
    const completed = await claimed();
    const unfinished = await claimed();
    const append = (c: typeof nothing, seq: number, type: string) =>
      appendFencedEvent(world.db, c.fence, seq, { type, data: { call_id: "c1" } });
    expect(await append(completed, 1, "tool.started")).toBe(true);
    expect(await append(completed, 2, "tool.completed")).toBe(true);
    expect(await append(unfinished, 1, "tool.started")).toBe(true);

    await failExpiredLeases(world.db, FAR_FUTURE);
    const messageOf = async (c: typeof nothing) => {
      const run = await world.run(c.runId);
      expect(run.error?.code).toBe("node_lost");
      return run.error?.message ?? "";
    };
    expect(await messageOf(nothing)).toContain("No command of it had started: nothing ran");
    expect(await messageOf(completed)).toContain("Every command it started had completed");
    expect(await messageOf(unfinished)).toContain("may have partly run");
    // The terminal event carries the same error as the row.
    const last = (await world.events(completed.runId)).at(-1);
    expect(JSON.stringify(last?.data)).toContain("Every command it started had completed");
  });

  it("leaves live leases alone, and keeps a sandbox another run of the scope still uses", async () => {
    const live = await claimed();
    const thread = await world.thread(await world.project());
    const expiredId = await world.commitRun(thread, "a");
    const stillRunningId = await world.commitRun(thread, "b");
    for (const runId of [expiredId, stillRunningId]) {
      const c = await claimParkedRun(world.db, { runId, nodeId: world.nodeId, leaseTtlMs: 60_000 });
      expect(c.ok).toBe(true);
    }
    await world.db
      .update(agentRuns)
      .set({ leaseExpiresAt: sql`now() - interval '1 second'` })
      .where(eq(agentRuns.runId, expiredId));
    await runningSandboxRow(thread, 9);

    const swept = await failExpiredLeases(world.db);
    expect(swept).toEqual([
      expect.objectContaining({ runIds: [expiredId], releasedSandbox: null }),
    ]);
    expect((await world.run(stillRunningId)).status).toBe("running");
    expect((await world.run(live.runId)).status).toBe("running");
  });
});

describe("failExpiredLeases with an aborted signal", () => {
  it("stops before the next scope and leaves it to the next call", async () => {
    const { runId } = await claimed();
    expect(await failExpiredLeases(world.db, FAR_FUTURE, AbortSignal.abort())).toEqual([]);
    expect((await world.run(runId)).status).toBe("running");
    const swept = await failExpiredLeases(world.db, FAR_FUTURE, AbortSignal.timeout(10_000));
    expect(swept.map((s) => s.runIds)).toEqual([[runId]]);
  });
});

describe("a worker whose lease is taken away", () => {
  it("stops its command and writes nothing more", async () => {
    const worker = await world.worker();
    const thread = await world.thread(await world.project());
    const runId = await world.submit(thread, "sleep 3133");
    await world.waitForEvent(runId, "tool.started");

    // The sweeper ends the run while its worker is alive (a long GC pause, a partition).
    const swept = await failExpiredLeases(world.db, FAR_FUTURE);
    expect(swept.map((s) => s.runIds)).toEqual([[runId]]);
    const sleeping = await processesInSandbox(world, thread, "sleep 3133");

    // The worker notices at its next heartbeat and kills the exec.
    await expect.poll(sleeping, { timeout: 20_000, interval: 100 }).toBe("0");

    // Once the worker has let go of the run (stop waits for every run it still
    // handles), nothing it could still write is missing from what we compare.
    const eventsAfterSweep = await world.events(runId);
    await worker.stop();
    expect(await world.events(runId)).toEqual(eventsAfterSweep);
    expectGapFree(eventsAfterSweep);
    expect(eventsAfterSweep.at(-1)?.data).toMatchObject({ error: { code: "node_lost" } });
    expect(await world.run(runId)).toMatchObject({
      status: "failed",
      error: { code: "node_lost" },
    });

    // The released sandbox is the reconciler's to remove.
    await world.sandboxManager.reconcile(AbortSignal.timeout(60_000));
    await world.waitForNoContainers();
  });
});
