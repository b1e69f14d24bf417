import { eq } from "drizzle-orm";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { SandboxDriver } from "../../../agent-host/sandbox/driver.ts";
import { sandboxes } from "../../../shared/db/schema/sandboxes.ts";
import { sandboxId } from "../../../shared/identity/sandbox-id.ts";
import { pollUntil } from "../../support/poll-until.ts";
import { freshScope, type ManagerWorld, managerWorld } from "./manager-fixture.ts";
import { containersOfNode } from "./sandbox-fixture.ts";

// Failure paths of the lifecycle settle (issue 14 (4)): a destroy whose engine call
// throws still closes the generation for every waiter, and a create whose every caller
// cancelled while it ran does not leave its container behind. The driver is the real
// Docker driver; the test only holds or breaks individual calls around it.

const signal = () => AbortSignal.timeout(60_000);
let world: ManagerWorld;

beforeEach(async () => {
  world = await managerWorld();
});
afterEach(async () => {
  await world.cleanup();
});

const scope = () => freshScope(world, "gina");

/** A gate a test opens; until then the wrapped call waits. */
function gate() {
  let open: () => void = () => {};
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  let entered: () => void = () => {};
  const reached = new Promise<void>((resolve) => {
    entered = resolve;
  });
  return { open, opened, entered, reached };
}

/** The world's real driver, with the calls in `around` replaced. */
function aroundDriver(around: Partial<SandboxDriver>): SandboxDriver {
  return {
    create: (spec, s) => world.driver.create(spec, s),
    inspect: (id, s) => world.driver.inspect(id, s),
    exec: (ref, r, s, fence) => world.driver.exec(ref, r, s, fence),
    destroy: (ref, s) => world.driver.destroy(ref, s),
    list: (n, s) => world.driver.list(n, s),
    ...around,
  };
}

/** The real driver, whose creates wait (after saying so) until the test opens `hold`. */
function holdingCreates(hold: ReturnType<typeof gate>): SandboxDriver {
  return aroundDriver({
    create: async (spec, s) => {
      hold.entered();
      await hold.opened;
      return world.driver.create(spec, s);
    },
  });
}

async function rowOf(request: { uid: string; runtimeScopeId: string }) {
  const [row] = await world.db
    .select()
    .from(sandboxes)
    .where(eq(sandboxes.sandboxId, sandboxId(request.uid, request.runtimeScopeId)));
  return row;
}

function until(check: () => Promise<boolean>, what: string) {
  return pollUntil(check, { what, timeoutMs: 30_000, intervalMs: 50 });
}

describe("an acquire that outlives its cancel", () => {
  it("rejects at once on cancel, and destroys the container it then creates", async () => {
    const hold = gate();
    // A slow engine: the create goes on after the caller gave up.
    const driver = holdingCreates(hold);
    const manager = world.manager(driver);
    const request = await scope();
    const cancel = new AbortController();
    const acquiring = manager.acquire(request, cancel.signal);
    await hold.reached;
    cancel.abort(new Error("run cancelled"));
    await expect(acquiring).rejects.toThrow("run cancelled");

    hold.open();
    // The create completes, finds nobody waiting, and removes what it made.
    await until(
      async () => (await rowOf(request))?.state === "destroyed",
      "the abandoned create to be destroyed",
    );
    expect(await containersOfNode(world.docker, world.nodeId)).toEqual([]);
    expect(manager.liveSandboxes).toBe(0);
  });

  it("keeps the create when another caller still waits for it", async () => {
    const hold = gate();
    const driver = holdingCreates(hold);
    const manager = world.manager(driver);
    const request = await scope();
    const cancel = new AbortController();
    const first = manager.acquire(request, cancel.signal);
    await hold.reached;
    const second = manager.acquire(request, signal());
    cancel.abort(new Error("first cancelled"));
    await expect(first).rejects.toThrow("first cancelled");
    hold.open();
    const out = await second;
    if (!out.ok) throw new Error("refused");
    expect((await rowOf(request))?.state).toBe("running");
    expect(await containersOfNode(world.docker, world.nodeId)).toHaveLength(1);
  });
});

describe("a destroy that throws", () => {
  it("still closes the generation: waiting and new uses are refused at once, the next acquire starts a new generation, and the reconciler removes the leftover", async () => {
    let failRemove = true;
    const driver = aroundDriver({
      destroy: async (ref, s) => {
        if (failRemove) throw new Error("connect ECONNREFUSED /var/run/docker.sock");
        return world.driver.destroy(ref, s);
      },
    });
    const manager = world.manager(driver);
    const request = await scope();
    const out = await manager.acquire(request, signal());
    if (!out.ok) throw new Error("refused");

    await expect(manager.destroy(out.handle, signal())).rejects.toThrow("ECONNREFUSED");
    // No waiter hangs on a half-closed generation: uses are refused, not parked.
    expect(await manager.exec(out.handle, { cmd: ["true"] }, signal())).toEqual({
      ok: false,
      reason: "stale_generation",
    });
    expect(manager.liveSandboxes).toBe(0);
    expect((await rowOf(request))?.state).toBe("destroying");

    // The scope goes on with a new generation.
    const next = await manager.acquire(request, signal());
    if (!next.ok) throw new Error("refused");
    expect(next.created).toBe(true);
    expect(next.handle.generation).toBeGreaterThan(out.handle.generation);

    // Docker is back: the old generation's container is an orphan of a stale generation.
    failRemove = false;
    const report = await manager.reconcile(signal());
    expect(report.destroyed).toEqual([out.handle.instanceId]);
    const left = await containersOfNode(world.docker, world.nodeId);
    expect(left.map((c) => c.Id)).toEqual([next.handle.instanceId]);
  });
});
