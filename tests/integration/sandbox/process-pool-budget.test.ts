import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, expect, it } from "vitest";
import type { SandboxManager } from "../../../agent-host/sandbox/lifecycle/sandbox-manager.ts";
import { pollUntil } from "../../support/poll-until.ts";
import { freshScope, type ManagerWorld, managerWorld } from "./manager-fixture.ts";

// The warm pool within the node's tmpfs budget (issue 41 item 2, decisions 0142, 0185): the
// manager fills the process tier's pool at start and after each create, off the acquire,
// only into the room the live sandboxes leave; its blanks give way before a create is
// refused; stop drains it. Real sandboxes, real PostgreSQL.

const signal = () => AbortSignal.timeout(60_000);
/** Each sandbox (and each blank) counts at its /tmp + home tmpfs sizes: 16 + 16 MiB in tests. */
const PER_SANDBOX = 32 * 1024 * 1024;
const CAPACITY = 2;

let world: ManagerWorld | undefined;
afterEach(async () => {
  await world?.cleanup();
  world = undefined;
});

it("fills the pool within the budget, takes a blank for a new generation, gives blanks back before refusing, and drains on stop", async () => {
  const w = await managerWorld(
    {
      keepWarmMs: 60_000,
      processPoolSize: 2,
      tmpfsBudgetBytes: (CAPACITY + 0.5) * PER_SANDBOX,
    },
    "process",
  );
  world = w;
  const pool = w.driver.pool;
  const stateDir = w.childTier.process?.stateDir;
  if (!pool || !stateDir) throw new Error("the process tier has no pool");
  const blanks = async () =>
    (await readdir(stateDir)).filter((name) => name.startsWith("process-pool-"));
  const live = async () => (await w.sandboxes()).length;
  /** The pool settled at `count` blanks, each one made. */
  const settledAt = (count: number) =>
    pollUntil(async () => pool.held() === count && (await blanks()).length === count, {
      what: `the pool holding ${count} blank(s)`,
    });
  const manager: SandboxManager = w.manager();
  await manager.start(signal());

  // At start, with nothing live, the pool fills to its size (2), which the budget allows.
  await settledAt(2);

  // A new generation: one blank gives way to make room, the other is taken; the refill
  // then makes only what the budget leaves beside the live sandbox (one).
  const first = await manager.acquire(await freshScope(w, "tenant-a"), signal());
  expect(first, JSON.stringify(first)).toMatchObject({ ok: true, created: true });
  await settledAt(1);
  expect((await live()) + pool.held()).toBeLessThanOrEqual(CAPACITY);

  // The second fills the budget: the blank gives way, nothing is refilled.
  const second = await manager.acquire(await freshScope(w, "tenant-b"), signal());
  expect(second).toMatchObject({ ok: true, created: true });
  await settledAt(0);
  expect(await live()).toBe(CAPACITY);

  // Both in use and no blank left: a third is refused as before, and no blank appears.
  const third = await manager.acquire(await freshScope(w, "tenant-a"), signal());
  expect(third).toMatchObject({ ok: false, reason: "sandbox_memory_budget" });
  expect(pool.held()).toBe(0);
  expect(await blanks()).toEqual([]);

  // A clean stop drains the pool (nothing is in it now; fill it back first by ending one).
  if (!first.ok) throw new Error("unreachable");
  expect((await manager.destroy(first.handle, signal())).ok).toBe(true);
  await manager.acquire(await freshScope(w, "tenant-a"), signal());
  await manager.releaseAll(signal());
  await manager.stop();
  expect(pool.held()).toBe(0);
  expect(await blanks()).toEqual([]);
  // This node's blanks only: another Workcell on the host (a dev instance) may hold its own.
  expect(await readFile("/proc/self/mountinfo", "utf8")).not.toContain(
    join(stateDir, "process-pool-"),
  );
}, 180_000);

it("drains on stop while blanks are ready, leaving no directory and no mount", async () => {
  const w = await managerWorld(
    { processPoolSize: 3, tmpfsBudgetBytes: 10 * PER_SANDBOX },
    "process",
  );
  world = w;
  const pool = w.driver.pool;
  const stateDir = w.childTier.process?.stateDir;
  if (!pool || !stateDir) throw new Error("the process tier has no pool");
  const manager = w.manager();
  await manager.start(signal());
  await pollUntil(async () => pool.held() === 3, { what: "the pool filled" });
  await manager.stop();
  expect(pool.held()).toBe(0);
  expect((await readdir(stateDir)).filter((n) => n.startsWith("process-pool-"))).toEqual([]);
  // This node's blanks only: another Workcell on the host (a dev instance) may hold its own.
  expect(await readFile("/proc/self/mountinfo", "utf8")).not.toContain(
    join(stateDir, "process-pool-"),
  );
}, 180_000);
