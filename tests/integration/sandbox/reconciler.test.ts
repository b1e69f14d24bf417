import { eq, sql } from "drizzle-orm";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { SandboxInstance } from "../../../agent-host/sandbox/driver.ts";
import { SANDBOX_LOCK_NAMESPACE } from "../../../agent-host/sandbox/lifecycle/sandbox-store.ts";
import { sandboxes } from "../../../shared/db/schema/sandboxes.ts";
import { sandboxId } from "../../../shared/identity/sandbox-id.ts";
import { type Child, spawnChild } from "./child-process.ts";
import { freshScope, type ManagerWorld, managerWorld, TIERS } from "./manager-fixture.ts";

const signal = () => AbortSignal.timeout(60_000);

describe.each(TIERS)("reconciler (%s tier)", (tier) => {
  let world: ManagerWorld;
  const children: Child[] = [];

  beforeEach(async () => {
    world = await managerWorld({}, tier);
  });
  afterEach(async () => {
    await Promise.all(children.splice(0).map((c) => c.kill9()));
    await world.cleanup();
  });

  const scope = (uid = "dave") => freshScope(world, uid);

  async function row(id: string) {
    const [r] = await world.db.select().from(sandboxes).where(eq(sandboxes.sandboxId, id));
    return r;
  }

  /** A container made behind the manager's back, labelled as a sandbox of this node. */
  async function strayContainer(generation: number, request?: Awaited<ReturnType<typeof scope>>) {
    const r = request ?? (await scope());
    const created = await world.driver.create(
      { ...r, sandboxId: sandboxId(r.uid, r.runtimeScopeId), generation, nodeId: world.nodeId },
      signal(),
    );
    if (!created.ok) throw new Error(created.detail);
    return created.instance;
  }

  /** The dead process's backend must have gone, releasing its locks, like a real restart. */
  async function waitForAdvisoryLocksReleased() {
    for (let i = 0; i < 600; i++) {
      const rows = await world.database
        .sql`select count(*)::int as n from pg_locks where locktype = 'advisory'`;
      if (rows[0]?.n === 0) return;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    throw new Error("advisory locks still held");
  }

  function childArgs(
    mode: "hang-after-create" | "hang-after-acquire",
    request: Awaited<ReturnType<typeof scope>>,
  ) {
    return {
      mode,
      dbUrl: world.database.url,
      dataRoot: world.dataRoot.path,
      nodeId: world.nodeId,
      image: world.image,
      ...world.childTier,
      ...request,
    };
  }

  it("after kill -9 mid-create, a restarted agent-host removes the orphan and creates once", async () => {
    const request = await scope();
    const child = spawnChild(childArgs("hang-after-create", request));
    children.push(child);
    const started = await child.next("container-started");
    const orphan = (started.created as { instance: SandboxInstance }).instance;
    await child.kill9();
    await waitForAdvisoryLocksReleased();
    // The crashed create's generation was rolled back with its transaction.
    const id = sandboxId(request.uid, request.runtimeScopeId);
    expect(await row(id)).toBeUndefined();
    expect((await world.sandboxes()).map((c) => c.instanceId)).toEqual([orphan.instanceId]);

    const restarted = world.manager();
    const report = await restarted.start(signal());
    expect(report.destroyed).toEqual([orphan.instanceId]);
    expect(report.adopted).toEqual([]);
    expect(await world.sandboxes()).toEqual([]);

    const out = await restarted.acquire(request, signal());
    expect(out.ok && out.created).toBe(true);
    expect(out.ok && out.handle.generation).toBeGreaterThan(orphan.generation);
    const left = await world.sandboxes();
    expect(left.map((c) => c.instanceId)).toEqual([out.ok && out.handle.instanceId]);
  });

  it("after kill -9 of a process holding a live sandbox, a restarted agent-host adopts it", async () => {
    const request = await scope();
    const child = spawnChild(childArgs("hang-after-acquire", request));
    children.push(child);
    const acquired = await child.next("acquired");
    const held = (acquired.result as { handle: { generation: number; instanceId: string } }).handle;
    await child.kill9();
    await waitForAdvisoryLocksReleased();

    const restarted = world.manager();
    const report = await restarted.start(signal());
    expect(report).toMatchObject({ adopted: [held.instanceId], destroyed: [], marked: [] });
    const out = await restarted.acquire(request, signal());
    expect(out).toMatchObject({ ok: true, created: false, handle: held });
    if (!out.ok) throw new Error("refused");
    const ran = await restarted.exec(out.handle, { cmd: ["echo", "still here"] }, signal());
    expect(ran.ok && ran.result.stdout.bytes.toString()).toBe("still here\n");
    expect(await world.sandboxes()).toHaveLength(1);
  });

  it("destroys containers without a row and containers of a stale generation", async () => {
    const manager = world.manager();
    const request = await scope();
    const first = await manager.acquire(request, signal());
    if (!first.ok) throw new Error("refused");
    await manager.destroy(first.handle, signal());
    const live = await manager.acquire(request, signal());
    if (!live.ok) throw new Error("refused");
    // The first generation's name is free again: a leftover of it is stale.
    const stale = await strayContainer(first.handle.generation, request);
    const noRow = await strayContainer(1_000_000);
    const report = await manager.reconcile(signal());
    expect(report.destroyed.sort()).toEqual([noRow.instanceId, stale.instanceId].sort());
    expect(report.adopted).toEqual([live.handle.instanceId]);
    const left = await world.sandboxes();
    expect(left.map((c) => c.instanceId)).toEqual([live.handle.instanceId]);
  });

  it("marks a live row whose container vanished, and the next acquire starts over", async () => {
    const manager = world.manager();
    const request = await scope();
    const live = await manager.acquire(request, signal());
    if (!live.ok) throw new Error("refused");
    await world.remove(live.handle.instanceId);

    const report = await manager.reconcile(signal());
    expect(report.marked).toEqual([live.handle.sandboxId]);
    expect(await row(live.handle.sandboxId)).toMatchObject({
      state: "failed",
      generation: live.handle.generation,
    });
    expect(await manager.exec(live.handle, { cmd: ["true"] }, signal())).toEqual({
      ok: false,
      reason: "stale_generation",
    });
    const next = await manager.acquire(request, signal());
    expect(next.ok && next.created).toBe(true);
  });

  it("destroys a live row's container whose keep-alive died, and marks the row", async () => {
    const manager = world.manager();
    const live = await manager.acquire(await scope(), signal());
    if (!live.ok) throw new Error("refused");
    await world.kill(live.handle.instanceId);
    const report = await manager.reconcile(signal());
    expect(report.destroyed).toEqual([live.handle.instanceId]);
    expect(await row(live.handle.sandboxId)).toMatchObject({ state: "failed" });
    expect(await world.sandboxes()).toEqual([]);
  });

  it("leaves alone a sandbox whose lock is held (a create in flight), and judges it later", async () => {
    const request = await scope();
    const id = sandboxId(request.uid, request.runtimeScopeId);
    const inFlight = await strayContainer(7, request);
    const manager = world.manager();
    const holder = await world.database.sql.reserve();
    try {
      await holder`begin`;
      await holder`select pg_advisory_xact_lock(${SANDBOX_LOCK_NAMESPACE}::int4, hashtext(${id}))`;
      const report = await manager.reconcile(signal());
      expect(report.skipped).toEqual([inFlight.instanceId]);
      expect(await world.sandboxes()).toHaveLength(1);
      await holder`rollback`;
    } finally {
      holder.release();
    }
    const later = await manager.reconcile(signal());
    expect(later.destroyed).toEqual([inFlight.instanceId]);
  });

  it("finishes a destroy whose destroyer crashed, but not one that is still draining", async () => {
    const manager = world.manager();
    const live = await manager.acquire(await scope(), signal());
    if (!live.ok) throw new Error("refused");
    const { sandboxId: id, generation } = live.handle;
    await world.db
      .update(sandboxes)
      .set({ state: "destroying", updatedAt: sql`now()` })
      .where(eq(sandboxes.sandboxId, id));
    expect((await manager.reconcile(signal())).skipped).toEqual([live.handle.instanceId]);

    await world.db
      .update(sandboxes)
      .set({ updatedAt: sql`now() - interval '1 day'` })
      .where(eq(sandboxes.sandboxId, id));
    expect((await manager.reconcile(signal())).destroyed).toEqual([live.handle.instanceId]);
    expect(await row(id)).toMatchObject({ state: "destroyed", generation });
  });
});
