import { eq } from "drizzle-orm";
import type postgres from "postgres";
import { afterEach, beforeEach, expect, it } from "vitest";
import { createDb } from "../../../shared/db/client.ts";
import { changeBatches } from "../../../shared/db/schema.ts";
import type { PausableProxy } from "../../support/pausable-proxy.ts";
import { pollUntil } from "../../support/poll-until.ts";
import { proxiedPostgres } from "../../support/proxied-postgres.ts";
import { expectGapFree, type RunWorld, runWorld } from "./run-harness.ts";

// Issue 38 (2), decision 0112: a PostgreSQL outage during a run's last statements must not
// fail a run whose command completed. The worker's database goes through a proxy that
// stops at one exact statement (the change batch's commit, or the ending's UPDATE); the
// test then cuts or freezes it until the database clock shows the outage for what it is,
// and lets it back. Durations are the test's limits, the waits conditions.

let world: RunWorld;
let proxy: PausableProxy;
let client: postgres.Sql;
/** The statement text the proxy stops before (undefined: forward everything). */
let stopBefore: string | undefined;

const LIMITS = {
  leaseTtlMs: 6_000,
  heartbeatIntervalMs: 500,
  databaseRetryAttemptMs: 1_000,
  databaseRetryMaxDelayMs: 300,
  changeRepairIntervalMs: 1_000,
};

beforeEach(async () => {
  world = await runWorld();
  stopBefore = undefined;
  ({ proxy, client } = await proxiedPostgres(world.database.url, {
    pauseBefore: (chunk) => {
      if (stopBefore === undefined || !chunk.includes(stopBefore)) return false;
      stopBefore = undefined;
      return true;
    },
  }));
  await world.worker({ listen: false, limits: LIMITS, extra: { db: createDb(client) } });
});
afterEach(async () => {
  proxy.resume();
  await world.cleanup();
  await client.end({ timeout: 1 }).catch(() => {});
  await proxy.close();
});

/** The run's lease as the database sees it: ms left (negative: expired). */
async function leaseLeftMs(runId: string): Promise<number> {
  const [row] = await world.database.sql<{ left: number }[]>`
    select extract(epoch from lease_expires_at - now()) * 1000 as left
    from agent_runs where run_id = ${runId}`;
  return Number(row?.left);
}

async function batchesOf(runId: string) {
  return world.db
    .select({ itemCount: changeBatches.itemCount, pendingRepair: changeBatches.pendingRepair })
    .from(changeBatches)
    .where(eq(changeBatches.runId, runId));
}

it("PostgreSQL stopped at the change batch's commit: the run ends succeeded with its batch recorded", async () => {
  const thread = await world.thread(await world.project());
  stopBefore = "insert into change_batches";
  const runId = await world.submit(thread, "echo outage > made-during-outage.txt");
  await pollUntil(async () => proxy.stopped, 30_000);
  // Stopped: every connection is closed and new ones are refused, as when the server is down.
  proxy.cut();
  // Down long enough that heartbeats failed (a third of the lease), not so long the
  // lease's own silence timer gives the run up (decision 0112 names that bound).
  await pollUntil(async () => (await leaseLeftMs(runId)) < LIMITS.leaseTtlMs * (2 / 3), 30_000);
  proxy.resume();

  const run = await world.waitForRun(runId);
  expect(run.status).toBe("succeeded");
  expect(run.error).toBeNull();
  await pollUntil(async () => {
    const batches = await batchesOf(runId);
    return batches.length === 1 && batches[0]?.pendingRepair === false;
  }, 30_000);
  expect(await batchesOf(runId)).toEqual([{ itemCount: 1, pendingRepair: false }]);
  const events = await world.events(runId);
  expectGapFree(events);
  expect(events.map((e) => e.type)).toContain("tool.completed");
  expect(events.at(-1)?.type).toBe("run.completed");
});

it("PostgreSQL frozen at the ending past the whole lease, its connections then lost: the ending is retried and the run ends succeeded, once", async () => {
  const thread = await world.thread(await world.project());
  // The ending's one statement (agent-host/runs/claim/finish-run.ts), at its first Parse.
  stopBefore = "finished_at = now()";
  const runId = await world.submit(thread, "echo frozen > made-before-freeze.txt");
  await pollUntil(async () => proxy.stopped, 30_000);
  // Frozen (connections open, nothing answered) until the lease has run out in the
  // database: the worker's retries keep the run, no sweeper could decide meanwhile.
  await pollUntil(async () => (await leaseLeftMs(runId)) < 0, 30_000);
  // The frozen connections then die (their peer's keepalive gives up), the server answers again.
  proxy.cut();
  proxy.resume();

  const run = await world.waitForRun(runId);
  expect(run.status).toBe("succeeded");
  expect(await batchesOf(runId)).toEqual([{ itemCount: 1, pendingRepair: false }]);
  const events = await world.events(runId);
  expectGapFree(events);
  expect(events.filter((e) => e.type === "run.completed")).toHaveLength(1);
});

it("PostgreSQL stopped while a claimed run is being prepared: handed back (nothing ran), then it runs once", async () => {
  const thread = await world.thread(await world.project());
  // The first statement of a claimed run's preparation (its events' next seq).
  stopBefore = "coalesce(max(seq), 0) + 1";
  const runId = await world.submit(thread, "echo prepared >> once.txt");
  await pollUntil(async () => proxy.stopped, 30_000);
  proxy.cut();
  await pollUntil(async () => (await leaseLeftMs(runId)) < LIMITS.leaseTtlMs * (2 / 3), 30_000);
  proxy.resume();

  const run = await world.waitForRun(runId);
  // Claimed twice: the first claim was handed back, not failed `internal`.
  expect(run).toMatchObject({ status: "succeeded", attempt: 2, error: null });
  expect(await batchesOf(runId)).toEqual([{ itemCount: 1, pendingRepair: false }]);
  const events = await world.events(runId);
  expectGapFree(events);
  expect(events.filter((e) => e.type === "tool.started")).toHaveLength(1);
});
