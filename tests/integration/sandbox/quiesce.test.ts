import { and, eq } from "drizzle-orm";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { SandboxDriver } from "../../../agent-host/sandbox/driver.ts";
import type { SandboxManager } from "../../../agent-host/sandbox/lifecycle/sandbox-manager.ts";
import { nodes } from "../../../shared/db/schema/nodes.ts";
import { sandboxes } from "../../../shared/db/schema/sandboxes.ts";
import { freshScope, type ManagerWorld, managerWorld, TIERS } from "./manager-fixture.ts";
import { startedSignal } from "./sandbox-fixture.ts";

const signal = () => AbortSignal.timeout(60_000);

describe.each(TIERS)("quiesce (%s tier)", (tier) => {
  let world: ManagerWorld;
  let manager: SandboxManager;

  beforeEach(async () => {
    world = await managerWorld({}, tier);
    manager = world.manager();
  });
  afterEach(async () => {
    await world.cleanup();
  });

  const scope = () => freshScope(world, "frank");

  async function runningRows() {
    return world.db
      .select()
      .from(sandboxes)
      .where(and(eq(sandboxes.nodeId, world.nodeId), eq(sandboxes.state, "running")));
  }

  it("destroys the node's sandboxes, refuses new ones on every process of the node until resumed", async () => {
    const a = await scope();
    const b = await scope();
    const ha = await manager.acquire(a, signal());
    const hb = await world.manager().acquire(b, signal()); // another process of this node
    if (!ha.ok || !hb.ok) throw new Error("refused");

    const report = await manager.quiesce(signal());
    expect(report.destroyed.sort()).toEqual([ha.handle.sandboxId, hb.handle.sandboxId].sort());
    expect(await world.sandboxes()).toEqual([]);
    expect(await runningRows()).toEqual([]);
    const [node] = await world.db.select().from(nodes).where(eq(nodes.nodeId, world.nodeId));
    expect(node?.state).toBe("quiesced");

    expect(await manager.acquire(a, signal())).toEqual({ ok: false, reason: "node_quiesced" });
    expect(await world.manager().acquire(await scope(), signal())).toEqual({
      ok: false,
      reason: "node_quiesced",
    });
    expect(await world.sandboxes()).toEqual([]);

    await manager.resume(signal());
    const after = await manager.acquire(a, signal());
    expect(after.ok && after.created).toBe(true);
  });

  it("drains creates in flight: none survives the quiesce", async () => {
    const requests = await Promise.all(Array.from({ length: 4 }, () => scope()));
    // The real driver, with every create held at its start until the quiesce has begun,
    // so that the quiesce provably meets creates in flight (in both processes).
    const allEntered = Promise.withResolvers<void>();
    const release = Promise.withResolvers<void>();
    let entered = 0;
    let returned = 0;
    const held = new Proxy(world.driver, {
      get(target, prop) {
        if (prop === "create") {
          return async (...args: Parameters<SandboxDriver["create"]>) => {
            if (++entered === requests.length) allEntered.resolve();
            await release.promise;
            try {
              return await target.create(...args);
            } finally {
              returned++;
            }
          };
        }
        const value = Reflect.get(target, prop, target);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
    const mine = world.manager(held);
    const other = world.manager(held);
    const acquiring = requests.map((r, i) => (i % 2 ? mine : other).acquire(r, signal()));
    await allEntered.promise;
    expect(returned).toBe(0);
    const quiescing = mine.quiesce(signal());
    release.resolve();
    await quiescing;
    const outcomes = await Promise.all(acquiring);
    expect(entered).toBe(requests.length);
    for (const out of outcomes) expect(out.ok || out.reason === "node_quiesced").toBe(true);
    expect(await world.sandboxes()).toEqual([]);
    expect(await runningRows()).toEqual([]);
  });

  it("lets an exec in flight finish within the drain", async () => {
    const out = await manager.acquire(await scope(), signal());
    if (!out.ok) throw new Error("refused");
    const started = startedSignal();
    const exec = manager.exec(
      out.handle,
      { cmd: ["sh", "-c", "echo started; sleep 0.3; echo finished"], onStdout: started.mark },
      signal(),
    );
    await started.seen; // the exec is in flight when the quiesce begins
    await manager.quiesce(signal());
    const ran = await exec;
    expect(ran.ok && ran.result.stdout.bytes.toString()).toBe("started\nfinished\n");
    expect(await world.sandboxes()).toEqual([]);
  });
});
