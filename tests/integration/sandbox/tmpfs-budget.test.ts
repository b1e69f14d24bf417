import { eq } from "drizzle-orm";
import { afterEach, expect, it } from "vitest";
import { acquireRefusalError } from "../../../agent-host/sandbox/lifecycle/acquire-sandbox.ts";
import type { SandboxManager } from "../../../agent-host/sandbox/lifecycle/sandbox-manager.ts";
import type { SandboxHandle } from "../../../agent-host/sandbox/sandbox-handle.ts";
import { sandboxes } from "../../../shared/db/schema/sandboxes.ts";
import { sandboxId as sandboxIdOf } from "../../../shared/identity/sandbox-id.ts";
import { freshScope, type ManagerWorld, managerWorld } from "./manager-fixture.ts";

// Issue 37 item 1 (decision 0142): the node's live sandboxes, in use and kept warm, count
// against one tmpfs budget; a create evicts the oldest warm ones first and is refused when
// none is left. Real sandboxes of the default (process) tier.

const signal = () => AbortSignal.timeout(60_000);
/** Each sandbox counts at its /tmp + home tmpfs sizes: 16 + 16 MiB in tests. */
const PER_SANDBOX = 32 * 1024 * 1024;

let world: ManagerWorld | undefined;
afterEach(async () => {
  await world?.cleanup();
  world = undefined;
});

async function budgetWorld(sandboxesThatFit: number) {
  const w = await managerWorld(
    { keepWarmMs: 60_000, tmpfsBudgetBytes: (sandboxesThatFit + 0.5) * PER_SANDBOX },
    "process",
  );
  world = w;
  const manager = w.manager();
  const scope = () => freshScope(w, "tenant-a");
  const create = async (uid = "tenant-a"): Promise<SandboxHandle> => {
    const out = await manager.acquire(await freshScope(w, uid), signal());
    if (!out.ok) throw new Error(`refused: ${out.reason}`);
    expect(out.created).toBe(true);
    return out.handle;
  };
  const state = async (handle: SandboxHandle) => {
    const [row] = await w.db
      .select()
      .from(sandboxes)
      .where(eq(sandboxes.sandboxId, handle.sandboxId));
    return row?.state === "running" && row.releasedAt !== null ? "warm" : row?.state;
  };
  const live = async () => (await w.sandboxes()).map((c) => c.instanceId).sort();
  return { w, manager, scope, create, state, live };
}

async function runs(manager: SandboxManager, handle: SandboxHandle): Promise<boolean> {
  const out = await manager.exec(
    handle,
    { cmd: ["sh", "-c", "echo x > /tmp/x && cat /tmp/x"] },
    signal(),
  );
  return out.ok && out.result.exitCode === 0;
}

it("refuses a create that does not fit while every live sandbox is in use: nothing is created, the others keep running", async () => {
  const { w, manager, scope, create, state, live } = await budgetWorld(2);
  const mine = await create();
  const neighbour = await create("tenant-b");
  const before = await live();

  const request = await scope();
  const out = await manager.acquire(request, signal());
  expect(out).toMatchObject({ ok: false, reason: "sandbox_memory_budget", live: 2 });
  if (out.ok) throw new Error("unreachable");
  const error = acquireRefusalError(out);
  expect(error.message).toContain("nothing of this run ran");
  expect(error.message).toContain("SANDBOX_TMPFS_BUDGET_MB");

  // No row, no sandbox for the refused scope; both others untouched and working.
  const refusedRows = await w.db
    .select()
    .from(sandboxes)
    .where(eq(sandboxes.sandboxId, sandboxIdOf(request.uid, request.runtimeScopeId)));
  expect(refusedRows).toEqual([]);
  expect(await live()).toEqual(before);
  expect([await state(mine), await state(neighbour)]).toEqual(["running", "running"]);
  expect(await runs(manager, mine)).toBe(true);
  expect(await runs(manager, neighbour)).toBe(true);

  // Once one is kept warm, the same create fits by evicting it.
  expect(await manager.keepWarm(neighbour, w.db)).toBe("kept");
  const again = await manager.acquire(request, signal());
  expect(again).toMatchObject({ ok: true, created: true });
  expect(await state(neighbour)).toBe("destroyed");
  expect(await state(mine)).toBe("running");
}, 180_000);

it("a create over the budget evicts the warm sandbox released longest ago first, whoever's it is, and never one in use", async () => {
  const { w, manager, create, state } = await budgetWorld(3);
  const inUse = await create();
  const olderWarm = await create("tenant-b");
  const newerWarm = await create();
  expect(await manager.keepWarm(olderWarm, w.db)).toBe("kept");
  expect(await manager.keepWarm(newerWarm, w.db)).toBe("kept");

  const fourth = await create();
  expect(await state(olderWarm)).toBe("destroyed");
  expect(await state(newerWarm)).toBe("warm");
  const fifth = await create();
  expect(await state(newerWarm)).toBe("destroyed");
  // Three in use fill the budget: the next is refused, and they all still run.
  await expect(create("tenant-b")).rejects.toThrow("refused: sandbox_memory_budget");
  for (const handle of [inUse, fourth, fifth]) {
    expect(await state(handle)).toBe("running");
    expect(await runs(manager, handle)).toBe(true);
  }
}, 180_000);

it("keeping a sandbox warm counts the sandboxes in use: only what the budget leaves beside them stays warm", async () => {
  const { w, manager, create, state } = await budgetWorld(2);
  const inUse = await create("tenant-b");
  const first = await create();
  expect(await manager.keepWarm(first, w.db)).toBe("kept");
  // One in use and one warm fit; a second warm one would not.
  expect(await manager.evictWarm("tenant-a", signal())).toEqual([]);
  expect(await state(first)).toBe("warm");
  expect(await manager.keepWarm(inUse, w.db)).toBe("kept");
  const second = await create();
  // The create made room by evicting the older warm one (first, released before inUse).
  expect(await state(first)).toBe("destroyed");
  expect(await manager.keepWarm(second, w.db)).toBe("kept");
  expect(await manager.evictWarm("tenant-a", signal())).toEqual([]);
  expect([await state(inUse), await state(second)]).toEqual(["warm", "warm"]);
}, 180_000);

it("concurrent creates over a full budget each evict a different warm sandbox: all fit, none is refused", async () => {
  const { w, manager, create, state } = await budgetWorld(4);
  const warm: SandboxHandle[] = [];
  for (let i = 0; i < 4; i++) warm.push(await create(i % 2 === 0 ? "tenant-a" : "tenant-b"));
  for (const handle of warm) expect(await manager.keepWarm(handle, w.db)).toBe("kept");

  // Four creates at once, each needing one warm sandbox gone: before, all chose the oldest
  // one, lost the race to each other and were refused after three rounds.
  const created = await Promise.all([0, 1, 2, 3].map(() => create()));
  for (const handle of warm) expect(await state(handle)).toBe("destroyed");
  for (const handle of created) {
    expect(await state(handle)).toBe("running");
    expect(await runs(manager, handle)).toBe(true);
  }
}, 240_000);
