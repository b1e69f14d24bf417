import { sql } from "drizzle-orm";
import { pino } from "pino";
import postgres from "postgres";
import { afterEach, beforeEach, describe, expect, test } from "vitest";
import type { RunFence } from "../../../agent-host/runs/claim/run-fence.ts";
import {
  type AcquireResult,
  ExecutionLeases,
} from "../../../agent-host/runs/execution-lease/execution-leases.ts";
import { LeaseWakeups } from "../../../agent-host/runs/execution-lease/lease-wakeups.ts";
import { createDb, type Db } from "../../../shared/db/client.ts";
import { executeRows } from "../../../shared/db/execute-rows.ts";
import { postgresListen } from "../../../shared/listen/postgres-listen.ts";
import { freshDatabase, type TestDatabase } from "../../support/postgres.ts";
import { type LeaseChild, spawnLeaseChild } from "./lease-child-process.ts";
import { seedRunningRun } from "./seed-runs.ts";

const logger = pino({ level: "silent" });

/** One "node": its own connection pool, LISTEN and lease service, like an agent-host. */
type Node = { leases: ExecutionLeases; close(): Promise<void> };

describe("Execution Lease (real Postgres)", () => {
  let database: TestDatabase;
  let db: Db;
  const closers: (() => Promise<void>)[] = [];
  const children: LeaseChild[] = [];

  beforeEach(async () => {
    database = await freshDatabase();
    db = createDb(database.sql);
  });
  afterEach(async () => {
    for (const child of children.splice(0)) await child.kill9();
    for (const close of closers.splice(0).reverse()) await close();
    await database.drop();
  });

  async function node(name: string): Promise<Node> {
    const client = postgres(database.url, { max: 4, onnotice: () => {} });
    const wakeups = new LeaseWakeups({ listen: postgresListen(client), logger });
    await wakeups.start();
    const leases = new ExecutionLeases({
      db: createDb(client),
      nodeId: name,
      wakeups,
      pollIntervalMs: 100,
      statementTimeoutMs: 5_000,
      logger,
    });
    const close = async () => {
      await wakeups.stop();
      await client.end({ timeout: 2 });
    };
    closers.push(close);
    return { leases, close };
  }

  const rowsOf = (runId: string) =>
    executeRows<{ state: string }>(
      db,
      sql`select state from execution_leases where run_id = ${runId} order by seq`,
    );

  /**
   * Awaits the condition by re-reading the table (the waiter's row is the observable
   * state). Bounded by a deadline far above any real wait, not by a number of reads: a
   * waiter in another process may still be starting Node when the first reads run.
   */
  async function untilRow(runId: string, state: string | "none"): Promise<void> {
    const deadline = AbortSignal.timeout(60_000);
    for (;;) {
      const rows = await rowsOf(runId);
      if (state === "none" ? rows.length === 0 : rows.some((r) => r.state === state)) return;
      if (deadline.aborted) throw new Error(`lease row of ${runId} never became ${state}`);
      await new Promise((resolve) => setImmediate(resolve));
    }
  }

  function granted(result: AcquireResult) {
    if (!result.ok) throw new Error(`lease refused: ${result.reason}`);
    return result.lease;
  }

  test("overlapping roots of one uid wait in arrival order; other roots and uids do not", async () => {
    const [n1, n2] = [await node("n1"), await node("n2")];
    const never = new AbortController().signal;
    const runs = await Promise.all([0, 1, 2, 3, 4].map(() => seedRunningRun(db, { uid: "alice" })));
    const bob = await seedRunningRun(db, { uid: "bob" });
    const [r0, r1, r2, r3, r4] = runs as unknown as [
      RunFence,
      RunFence,
      RunFence,
      RunFence,
      RunFence,
    ];
    const order: string[] = [];
    const a = granted(await n1.leases.acquire(r0, "code/app", never));
    // Not an ancestor: "code/app" is no prefix of "code/apple".
    const d = granted(await n2.leases.acquire(r1, "code/apple", never));
    const bPending = n2.leases.acquire(r2, "code/app/src", never).then((r) => {
      order.push("b");
      return granted(r);
    });
    await untilRow(r2.runId, "waiting");
    // Another uid on the very same path never waits for alice.
    const e = granted(await n1.leases.acquire(bob, "code/app", never));
    const cPending = n1.leases.acquire(r3, "code", never).then((r) => {
      order.push("c");
      return granted(r);
    });
    await untilRow(r3.runId, "waiting");
    expect(a.waited || d.waited || e.waited).toBe(false);

    await n1.leases.release(a);
    const b = await bPending;
    expect(b.waited).toBe(true);
    // "code" overlaps b (held) and d (held): still waiting, behind both.
    expect(await rowsOf(r3.runId)).toEqual([{ state: "waiting" }]);
    await n2.leases.release(d);
    await n1.leases.release(e);
    expect(await rowsOf(r3.runId)).toEqual([{ state: "waiting" }]);
    // A later arrival on a root under "code" queues behind c: no overtaking.
    const fPending = n2.leases.acquire(r4, "code/lib", never).then((r) => {
      order.push("f");
      return granted(r);
    });
    await untilRow(r4.runId, "waiting");
    await n2.leases.release(b);
    const c = await cPending;
    expect(await rowsOf(r4.runId)).toEqual([{ state: "waiting" }]);
    await n1.leases.release(c);
    await n2.leases.release(await fPending);
    expect(order).toEqual(["b", "c", "f"]);
    expect(await executeRows(db, sql`select * from execution_leases`)).toEqual([]);
  });

  test("a command cancelled while waiting never gets the lease and leaves nothing queued", async () => {
    const [n1, n2] = [await node("n1"), await node("n2")];
    const holder = await seedRunningRun(db, { uid: "alice" });
    const waiter = await seedRunningRun(db, { uid: "alice" });
    const held = granted(await n1.leases.acquire(holder, "w", new AbortController().signal));
    const cancel = new AbortController();
    const pending = n2.leases.acquire(waiter, "w", cancel.signal);
    await untilRow(waiter.runId, "waiting");
    cancel.abort();
    expect(await pending).toEqual({ ok: false, reason: "cancelled" });
    expect(await rowsOf(waiter.runId)).toEqual([]);
    await n1.leases.release(held);
    // Nothing of the cancelled command is left in front of a new arrival.
    const next = granted(await n2.leases.acquire(waiter, "w", new AbortController().signal));
    expect(next.waited).toBe(false);
  });

  test("a run that is not live gets no lease and leaves no row", async () => {
    const n1 = await node("n1");
    const run = await seedRunningRun(db, { uid: "alice" });
    const stale = { ...run, attempt: run.attempt + 1 };
    expect(await n1.leases.acquire(stale, "w", new AbortController().signal)).toEqual({
      ok: false,
      reason: "run_not_live",
    });
    await db.execute(
      sql`update agent_runs set status = 'cancelled', finished_at = now() where run_id = ${run.runId}`,
    );
    expect(await n1.leases.acquire(run, "w", new AbortController().signal)).toEqual({
      ok: false,
      reason: "run_not_live",
    });
    expect(await executeRows(db, sql`select * from execution_leases`)).toEqual([]);
  });

  test("two agent-host processes racing for one root: one holds, the other waits for its release", async () => {
    const first = await seedRunningRun(db, { uid: "alice" });
    const second = await seedRunningRun(db, { uid: "alice" });
    const args = (fence: RunFence) => ({
      url: database.url,
      fence,
      workdirPath: "shared/repo",
      leaseTtlMs: 30_000,
    });
    const a = spawnLeaseChild(args(first));
    const b = spawnLeaseChild(args(second));
    children.push(a, b);
    // Whichever process got there first holds; the other's row waits behind it.
    const aAcquired = a.next("acquired");
    const bAcquired = b.next("acquired");
    const winner = await Promise.race([
      aAcquired.then(() => ({
        holder: a,
        waiter: b,
        waiterRun: second,
        waiterAcquired: bAcquired,
      })),
      bAcquired.then(() => ({ holder: b, waiter: a, waiterRun: first, waiterAcquired: aAcquired })),
    ]);
    await untilRow(winner.waiterRun.runId, "waiting");
    const states = await executeRows<{ state: string }>(
      db,
      sql`select state from execution_leases order by seq`,
    );
    expect(states.map((s) => s.state).sort()).toEqual(["held", "waiting"]);
    winner.holder.release();
    await winner.holder.next("released");
    await winner.waiterAcquired;
    expect(await rowsOf(winner.waiterRun.runId)).toEqual([{ state: "held" }]);
    winner.waiter.release();
    await winner.waiter.next("released");
  });

  test("a node killed (kill -9) while holding a lease frees it within the run-lease TTL", async () => {
    const n1 = await node("n1");
    const leaseTtlMs = 1_500;
    const victim = await seedRunningRun(db, { uid: "alice", leaseTtlMs });
    const survivor = await seedRunningRun(db, { uid: "alice" });
    const child = spawnLeaseChild({
      url: database.url,
      fence: victim,
      workdirPath: "w",
      leaseTtlMs,
    });
    children.push(child);
    await child.next("acquired");
    const pending = n1.leases.acquire(survivor, "w", new AbortController().signal);
    await untilRow(survivor.runId, "waiting");
    await child.kill9();
    const lease = granted(await pending);
    expect(lease.waited).toBe(true);
    // Granted only because the dead holder's run lease had run out, and its row is gone.
    const [victimRun] = await executeRows<{ expired: boolean }>(
      db,
      sql`select lease_expires_at <= now() as expired from agent_runs where run_id = ${victim.runId}`,
    );
    expect(victimRun?.expired).toBe(true);
    expect(await rowsOf(victim.runId)).toEqual([]);
    await n1.leases.release(lease);
  });
});
