import { randomUUID } from "node:crypto";
import { eq, sql } from "drizzle-orm";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { SandboxManager } from "../../../agent-host/sandbox/lifecycle/sandbox-manager.ts";
import type { SandboxHandle } from "../../../agent-host/sandbox/sandbox-handle.ts";
import { sandboxes } from "../../../shared/db/schema/sandboxes.ts";
import { freshScope, type ManagerWorld, managerWorld, TIERS } from "./manager-fixture.ts";
import { materializeWorkdir, startedSignal } from "./sandbox-fixture.ts";

const signal = () => AbortSignal.timeout(60_000);

describe.each(TIERS)("idle reaper (%s tier)", (tier) => {
  let world: ManagerWorld;
  let manager: SandboxManager;

  beforeEach(async () => {
    world = await managerWorld({ execTimeoutMs: 20_000, idleTimeoutMs: 60_000 }, tier);
    manager = world.manager();
  });
  afterEach(async () => {
    await world.cleanup();
  });

  const scope = () => freshScope(world, "erin");

  async function acquireHandle(request: Awaited<ReturnType<typeof scope>>): Promise<SandboxHandle> {
    const out = await manager.acquire(request, signal());
    if (!out.ok) throw new Error("refused");
    return out.handle;
  }

  /** Makes a sandbox look unused for an hour, as Postgres sees time. */
  async function backdate(handle: SandboxHandle) {
    await world.db
      .update(sandboxes)
      .set({ lastUsedAt: sql`now() - interval '1 hour'` })
      .where(eq(sandboxes.sandboxId, handle.sandboxId));
  }

  async function state(handle: SandboxHandle) {
    const [r] = await world.db
      .select()
      .from(sandboxes)
      .where(eq(sandboxes.sandboxId, handle.sandboxId));
    return r && { generation: r.generation, state: r.state };
  }

  it("destroys only sandboxes idle for longer than the configured time", async () => {
    const idle = await acquireHandle(await scope());
    const busy = await acquireHandle(await scope());
    await backdate(idle);
    expect(await manager.reapIdle(signal())).toEqual([idle.sandboxId]);
    expect(await state(idle)).toEqual({ generation: idle.generation, state: "destroyed" });
    expect(await state(busy)).toEqual({ generation: busy.generation, state: "running" });
    expect((await world.sandboxes()).map((c) => c.instanceId)).toEqual([busy.instanceId]);
  });

  it("does not reap a sandbox touched after it was found idle", async () => {
    const handle = await acquireHandle(await scope());
    await backdate(handle);
    const [candidate] = await manager.findIdle(signal());
    expect(candidate).toEqual({ sandboxId: handle.sandboxId, generation: handle.generation });
    expect(await manager.touch(handle, signal())).toEqual({ ok: true });

    expect(await manager.reapIfIdle(candidate as NonNullable<typeof candidate>, signal())).toBe(
      false,
    );
    expect(await state(handle)).toEqual({ generation: handle.generation, state: "running" });
    // Not forgotten either: the warm path and exec still work.
    const again = await manager.acquire(
      { uid: handle.uid, runtimeScopeId: handle.runtimeScopeId, workdirPath: handle.workdirPath },
      signal(),
    );
    expect(again).toMatchObject({ ok: true, created: false, handle });
    const ran = await manager.exec(handle, { cmd: ["true"] }, signal());
    expect(ran.ok && ran.result.exitCode).toBe(0);
  });

  it("does not reap a newer generation created after the old one was found idle", async () => {
    const request = await scope();
    const old = await acquireHandle(request);
    await backdate(old);
    const [candidate] = await manager.findIdle(signal());
    await manager.destroy(old, signal());
    const newer = await acquireHandle(request);
    // Even if the newer generation is itself idle, the old observation must not reach it.
    await backdate(newer);

    expect(await manager.reapIfIdle(candidate as NonNullable<typeof candidate>, signal())).toBe(
      false,
    );
    expect(await state(newer)).toEqual({ generation: newer.generation, state: "running" });
    expect((await world.sandboxes()).map((c) => c.instanceId)).toEqual([newer.instanceId]);
    // Observed afresh, the newer idle generation is reaped normally.
    expect(await manager.reapIdle(signal())).toEqual([newer.sandboxId]);
  });

  it("does not reap a sandbox with an exec in flight", async () => {
    const handle = await acquireHandle(await scope());
    const started = startedSignal();
    const exec = manager.exec(
      handle,
      { cmd: ["sh", "-c", "echo started; sleep 0.5; echo ok"], onStdout: started.mark },
      signal(),
    );
    await started.seen; // in flight: pinned
    await backdate(handle); // as if the exec had started long ago
    const [candidate] = await manager.findIdle(signal());
    expect(await manager.reapIfIdle(candidate as NonNullable<typeof candidate>, signal())).toBe(
      false,
    );
    const ran = await exec;
    expect(ran.ok && ran.result.stdout.bytes.toString()).toBe("started\nok\n");
    expect(await state(handle)).toEqual({ generation: handle.generation, state: "running" });
  });

  it("runs periodically once started", async () => {
    const fast = await managerWorld(
      {
        execTimeoutMs: 100,
        idleTimeoutMs: 400,
        reaperIntervalMs: 100,
      },
      tier,
    );
    try {
      const m = fast.manager();
      await m.start(signal());
      const workdirPath = `projects/${randomUUID()}`;
      await materializeWorkdir(fast.dataRoot.path, "erin", workdirPath);
      const out = await m.acquire(
        { uid: "erin", runtimeScopeId: randomUUID(), workdirPath },
        signal(),
      );
      if (!out.ok) throw new Error("refused");
      // Nobody calls reapIdle: only the manager's own timer can remove it.
      await expect
        .poll(async () => (await fast.sandboxes()).length, { timeout: 20_000, interval: 100 })
        .toBe(0);
    } finally {
      await fast.cleanup();
    }
  });
});
