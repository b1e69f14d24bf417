import { eq, sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AcquireRequest } from "../../../agent-host/sandbox/lifecycle/acquire-sandbox.ts";
import type { SandboxManager } from "../../../agent-host/sandbox/lifecycle/sandbox-manager.ts";
import type { SandboxHandle } from "../../../agent-host/sandbox/sandbox-handle.ts";
import { tierOfInstanceId } from "../../../agent-host/sandbox/sandbox-tier.ts";
import { sandboxes } from "../../../shared/db/schema/sandboxes.ts";
import { freshScope, type ManagerWorld, managerWorld } from "./manager-fixture.ts";

// Issue 32 (2): no code path of the sandbox manager may hold a transaction open while it
// waits for a second pooled connection. Here the manager's pool has ONE connection
// (postgres.js `max: 1`): a path that did so (the kept-warm replace destroyed the old
// generation from inside the sandbox lock's transaction) waits for ever, and the bound
// below fails it with the step's name instead of a bare test timeout.

const signal = () => AbortSignal.timeout(120_000);
/** Far beyond any create on a loaded machine; a pool deadlock never ends. */
const STEP_BOUND_MS = 60_000;

/** The step, or a failure naming it when it never settles (a waiting transaction). */
async function step<T>(what: string, work: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const hung = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`${what}: still waiting after ${STEP_BOUND_MS} ms (pool of one)`)),
      STEP_BOUND_MS,
    );
  });
  try {
    return await Promise.race([work, hung]);
  } finally {
    clearTimeout(timer);
  }
}

describe("the sandbox manager on a pool of one connection", () => {
  let world: ManagerWorld;
  let manager: SandboxManager;

  beforeAll(async () => {
    world = await managerWorld({ keepWarmMs: 60_000 }, "container", {
      poolMax: 1,
      bothTiers: true,
    });
    manager = world.manager();
  }, 120_000);
  afterAll(async () => {
    await world?.cleanup();
  });

  async function acquired(what: string, request: AcquireRequest): Promise<SandboxHandle> {
    const out = await step(what, manager.acquire(request, signal()));
    if (!out.ok) throw new Error(`${what}: refused ${JSON.stringify(out)}`);
    return out.handle;
  }

  async function rowOf(handle: SandboxHandle) {
    const [row] = await world.db
      .select({ generation: sandboxes.generation, state: sandboxes.state })
      .from(sandboxes)
      .where(eq(sandboxes.sandboxId, handle.sandboxId));
    return row;
  }

  async function runningIds(): Promise<string[]> {
    return (await world.sandboxes()).filter((c) => c.running).map((c) => c.instanceId);
  }

  it("replaces a kept-warm sandbox of the other tier, both ways", async () => {
    const request = await freshScope(world, "alice");
    const first = await acquired("create (container)", { ...request, tier: "container" });
    expect(await manager.keepWarm(first, world.db)).toBe("kept");
    const second = await acquired("kept-warm replace (→ process)", {
      ...request,
      tier: "process",
    });
    expect(tierOfInstanceId(second.instanceId)).toBe("process");
    expect(second.generation).toBeGreaterThan(first.generation);
    expect(await runningIds()).not.toContain(first.instanceId);
    const ran = await step("exec", manager.exec(second, { cmd: ["true"] }, signal()));
    expect(ran).toMatchObject({ ok: true, result: { exitCode: 0 } });
    expect(await manager.keepWarm(second, world.db)).toBe("kept");
    const third = await acquired("kept-warm replace (→ container)", {
      ...request,
      tier: "container",
    });
    expect(tierOfInstanceId(third.instanceId)).toBe("container");
    expect(await runningIds()).not.toContain(second.instanceId);
    expect(await step("destroy", manager.destroy(third, signal()))).toEqual({ ok: true });
  }, 300_000);

  it("replaces a kept-warm sandbox of the other file view", async () => {
    const request = await freshScope(world, "bob");
    const first = await acquired("create (workdir view)", {
      ...request,
      tier: "process",
      fileView: "workdir",
    });
    expect(await manager.keepWarm(first, world.db)).toBe("kept");
    const second = await acquired("kept-warm replace (→ workspace view)", {
      ...request,
      tier: "process",
      fileView: "workspace",
    });
    expect(second.fileView).toBe("workspace");
    expect(await rowOf(first)).toEqual({ generation: second.generation, state: "running" });
    expect(await runningIds()).not.toContain(first.instanceId);
    expect(await step("destroy", manager.destroy(second, signal()))).toEqual({ ok: true });
  }, 300_000);

  it("replaces a dead generation, reaps, reconciles, quiesces and resumes", async () => {
    const request = { ...(await freshScope(world, "carol")), tier: "container" as const };
    const first = await acquired("create", request);
    await world.kill(first.instanceId);
    // Another process of the node (no live entry) must inspect, find it dead, replace it.
    const other = world.manager();
    const out = await step("dead replace", other.acquire(request, signal()));
    if (!out.ok) throw new Error(`dead replace refused: ${JSON.stringify(out)}`);
    expect(out.created).toBe(true);
    expect(out.handle.generation).toBeGreaterThan(first.generation);
    const report = await step("reconcile", other.reconcile(signal()));
    expect(report.destroyed).not.toContain(out.handle.instanceId);
    await world.db
      .update(sandboxes)
      .set({ lastUsedAt: sql`now() - interval '1 day'` })
      .where(eq(sandboxes.sandboxId, out.handle.sandboxId));
    expect(await step("reap", other.reapIdle(signal()))).toEqual([out.handle.sandboxId]);
    const again = await step("create after reap", other.acquire(request, signal()));
    expect(again).toMatchObject({ ok: true, created: true });
    const quiesced = await step("quiesce", other.quiesce(signal()));
    expect(quiesced.destroyed).toContain(out.handle.sandboxId);
    expect(await step("refused while quiesced", other.acquire(request, signal()))).toEqual({
      ok: false,
      reason: "node_quiesced",
    });
    await step("resume", other.resume(signal()));
    expect(await step("create after resume", other.acquire(request, signal()))).toMatchObject({
      ok: true,
      created: true,
    });
    await step("stop", other.stop());
  }, 300_000);

  it("serves concurrent acquires of several scopes and of one scope", async () => {
    const scopes = await Promise.all(["dave", "erin"].map((uid) => freshScope(world, uid)));
    const outs = await step(
      "concurrent acquires",
      Promise.all(
        [...scopes, ...scopes].map((s) => manager.acquire({ ...s, tier: "process" }, signal())),
      ),
    );
    expect(outs.every((o) => o.ok)).toBe(true);
    const created = outs.filter((o) => o.ok && o.created);
    expect(created).toHaveLength(2);
  }, 300_000);
});
