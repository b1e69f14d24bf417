import { randomUUID } from "node:crypto";
import { readdir } from "node:fs/promises";
import { join } from "node:path";
import { eq } from "drizzle-orm";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { acquireRefusalError } from "../../../agent-host/sandbox/lifecycle/acquire-sandbox.ts";
import type { SandboxManager } from "../../../agent-host/sandbox/lifecycle/sandbox-manager.ts";
import { SANDBOX_LOCK_NAMESPACE } from "../../../agent-host/sandbox/lifecycle/sandbox-store.ts";
import type { SandboxHandle } from "../../../agent-host/sandbox/sandbox-handle.ts";
import { sandboxes } from "../../../shared/db/schema/sandboxes.ts";
import { sandboxId } from "../../../shared/identity/sandbox-id.ts";
import { runtimeWorkdirPath } from "../../../shared/paths/runtime-paths.ts";
import { freshScope, type ManagerWorld, managerWorld, TIERS } from "./manager-fixture.ts";
import { materializeWorkdir, startedSignal } from "./sandbox-fixture.ts";

const signal = () => AbortSignal.timeout(60_000);

describe.each(TIERS)("SandboxManager (%s tier)", (tier) => {
  let world: ManagerWorld;
  let manager: SandboxManager;

  beforeEach(async () => {
    world = await managerWorld({}, tier);
    manager = world.manager();
  });
  afterEach(async () => {
    await world.cleanup();
  });

  const scope = (uid = "alice") => freshScope(world, uid);

  async function acquireOk(request: Awaited<ReturnType<typeof scope>>) {
    const out = await manager.acquire(request, signal());
    if (!out.ok) throw new Error(`acquire refused: ${JSON.stringify(out)}`);
    return out;
  }

  async function row(id: string) {
    const [r] = await world.db.select().from(sandboxes).where(eq(sandboxes.sandboxId, id));
    return r;
  }

  async function runningContainers() {
    return (await world.sandboxes()).filter((c) => c.running);
  }

  it("creates once, reuses while live, fences by generation after destroy", async () => {
    const request = await scope();
    const first = await acquireOk(request);
    expect(first.created).toBe(true);
    const { handle } = first;
    expect(handle.sandboxId).toBe(sandboxId(request.uid, request.runtimeScopeId));
    expect(runtimeWorkdirPath(handle.workdirPath)).toBe(
      `/home/gem/user-data/${request.workdirPath}`,
    );
    expect(await row(handle.sandboxId)).toMatchObject({
      generation: handle.generation,
      state: "running",
      instanceId: handle.instanceId,
      nodeId: world.nodeId,
      workdirPath: request.workdirPath,
    });

    const again = await acquireOk(request);
    expect(again).toEqual({ ok: true, handle, created: false });

    const ran = await manager.exec(handle, { cmd: ["sh", "-c", "pwd; id -u"] }, signal());
    expect(ran.ok && ran.result.stdout.bytes.toString()).toBe(
      `${runtimeWorkdirPath(handle.workdirPath)}\n1000\n`,
    );

    expect(await manager.destroy(handle, signal())).toEqual({ ok: true });
    expect(await row(handle.sandboxId)).toMatchObject({
      state: "destroyed",
      generation: handle.generation,
    });
    expect(await world.sandboxes()).toEqual([]);
    expect(await manager.exec(handle, { cmd: ["true"] }, signal())).toEqual({
      ok: false,
      reason: "stale_generation",
    });
    expect(await manager.touch(handle, signal())).toEqual({
      ok: false,
      reason: "stale_generation",
    });
    expect(await manager.destroy(handle, signal())).toEqual({
      ok: false,
      reason: "stale_generation",
    });

    const next = await acquireOk(request);
    expect(next.created).toBe(true);
    expect(next.handle.generation).toBeGreaterThan(handle.generation);
  });

  it("turns 32 concurrent acquires of one scope into exactly one create", async () => {
    const request = await scope();
    const results = await Promise.all(
      Array.from({ length: 32 }, () => manager.acquire(request, signal())),
    );
    const handles = results.map((r) => (r.ok ? r.handle : undefined));
    expect(new Set(handles.map((h) => h?.generation)).size).toBe(1);
    expect(new Set(handles.map((h) => h?.instanceId)).size).toBe(1);
    expect(results.filter((r) => r.ok && r.created)).toHaveLength(1);
    expect(await world.sandboxes()).toHaveLength(1);
  });

  it("turns concurrent acquires through two managers sharing the database into one create", async () => {
    const request = await scope();
    const other = world.manager();
    const results = await Promise.all(
      Array.from({ length: 16 }, (_, i) => (i % 2 ? manager : other).acquire(request, signal())),
    );
    expect(new Set(results.map((r) => r.ok && r.handle.generation))).toHaveLength(1);
    expect(results.filter((r) => r.ok && r.created)).toHaveLength(1);
    expect(await world.sandboxes()).toHaveLength(1);
  });

  it("runs nothing when the fence says the generation is over, though this process still holds it", async () => {
    // Another agent-host process ended the generation: only the row says so (this
    // manager's live entry and the sandbox itself still look current). The driver
    // prepares while the fence is in flight (decision 0083) but must not start the command.
    const request = await scope();
    const { handle } = await acquireOk(request);
    await world.db
      .update(sandboxes)
      .set({ state: "destroying" })
      .where(eq(sandboxes.sandboxId, handle.sandboxId));
    expect(
      await manager.exec(handle, { cmd: ["sh", "-c", "echo ran > fenced-out"] }, signal()),
    ).toEqual({ ok: false, reason: "stale_generation" });
    const users = await readdir(join(world.dataRoot.path, "users"), { recursive: true });
    expect(users.filter((entry) => entry.endsWith("fenced-out"))).toEqual([]);
    // Refused by the fence, not by a failure: the row is not marked failed by this use.
    expect((await row(handle.sandboxId))?.state).toBe("destroying");
  });

  it("refuses a stale destroy after a re-create and leaves the newer sandbox alone", async () => {
    const request = await scope();
    const old = (await acquireOk(request)).handle;
    expect(await manager.destroy(old, signal())).toEqual({ ok: true });
    const newer = (await acquireOk(request)).handle;
    expect(newer.generation).toBeGreaterThan(old.generation);

    // The stale handle, and a hand-made one naming the newer container with the old
    // generation, both change nothing.
    expect(await manager.destroy(old, signal())).toEqual({ ok: false, reason: "stale_generation" });
    const forged: SandboxHandle = { ...old, instanceId: newer.instanceId };
    expect(await manager.destroy(forged, signal())).toEqual({
      ok: false,
      reason: "stale_generation",
    });
    expect(await manager.exec(forged, { cmd: ["true"] }, signal())).toEqual({
      ok: false,
      reason: "stale_generation",
    });

    expect(await row(newer.sandboxId)).toMatchObject({
      generation: newer.generation,
      state: "running",
    });
    const ran = await manager.exec(newer, { cmd: ["true"] }, signal());
    expect(ran.ok && ran.result.exitCode).toBe(0);
    expect((await runningContainers()).map((c) => c.instanceId)).toEqual([newer.instanceId]);
  });

  it("refuses Workdir drift within a scope and changes nothing", async () => {
    const request = await scope();
    const live = (await acquireOk(request)).handle;
    const before = await row(live.sandboxId);
    const otherWorkdir = `projects/${randomUUID()}`;
    await materializeWorkdir(world.dataRoot.path, request.uid, otherWorkdir);

    const drift = await manager.acquire({ ...request, workdirPath: otherWorkdir }, signal());
    expect(drift).toEqual({
      ok: false,
      reason: "sandbox_identity_mismatch",
      liveWorkdirPath: request.workdirPath,
    });
    const after = await row(live.sandboxId);
    expect(after).toMatchObject({
      generation: before?.generation,
      state: "running",
      instanceId: live.instanceId,
      workdirPath: request.workdirPath,
    });
    expect((await runningContainers()).map((c) => c.instanceId)).toEqual([live.instanceId]);
    const ran = await manager.exec(live, { cmd: ["pwd"] }, signal());
    expect(ran.ok && ran.result.stdout.bytes.toString()).toBe(
      `${runtimeWorkdirPath(live.workdirPath)}\n`,
    );
  });

  it("lets exactly one of two concurrent acquires with different Workdirs win", async () => {
    const request = await scope();
    const otherWorkdir = `projects/${randomUUID()}`;
    await materializeWorkdir(world.dataRoot.path, request.uid, otherWorkdir);
    const results = await Promise.all([
      manager.acquire(request, signal()),
      world.manager().acquire({ ...request, workdirPath: otherWorkdir }, signal()),
    ]);
    expect(results.filter((r) => r.ok)).toHaveLength(1);
    expect(results.filter((r) => !r.ok && r.reason === "sandbox_identity_mismatch")).toHaveLength(
      1,
    );
    expect(await world.sandboxes()).toHaveLength(1);
  });

  it("keeps separate scopes on one Workdir apart: same files, separate processes and /tmp", async () => {
    const a = await scope();
    const b = { ...a, runtimeScopeId: randomUUID() };
    const ha = (await acquireOk(a)).handle;
    const hb = (await acquireOk(b)).handle;
    expect(ha.sandboxId).not.toBe(hb.sandboxId);
    await manager.exec(
      ha,
      { cmd: ["sh", "-c", "echo shared > file.txt; echo mine > /tmp/t"] },
      signal(),
    );
    const seen = await manager.exec(hb, { cmd: ["sh", "-c", "cat file.txt; ls /tmp"] }, signal());
    expect(seen.ok && seen.result.stdout.bytes.toString()).toBe("shared\n");
  });

  it("replaces a live generation whose container stopped, and removes the stopped one", async () => {
    const request = await scope();
    const old = (await acquireOk(request)).handle;
    await world.kill(old.instanceId);
    const fresh = world.manager(); // knows nothing in memory, like another process
    const out = await fresh.acquire(request, signal());
    expect(out.ok && out.created).toBe(true);
    expect(out.ok && out.handle.generation).toBeGreaterThan(old.generation);
    const left = await world.sandboxes();
    expect(left.map((c) => c.instanceId)).toEqual([out.ok && out.handle.instanceId]);
  });

  it("answers sandbox_busy when another process holds the sandbox lock for too long", async () => {
    const slow = await managerWorld({ createTimeoutMs: 200 }, tier);
    try {
      const workdirPath = `projects/${randomUUID()}`;
      await materializeWorkdir(slow.dataRoot.path, "alice", workdirPath);
      const request = { uid: "alice", runtimeScopeId: randomUUID(), workdirPath };
      const id = sandboxId(request.uid, request.runtimeScopeId);
      const holder = await slow.database.sql.reserve();
      try {
        await holder`begin`;
        await holder`select pg_advisory_xact_lock(${SANDBOX_LOCK_NAMESPACE}::int4, hashtext(${id}))`;
        // A value, not a throw (issue 33 (6)): the run is handed back, nothing ran.
        const out = await slow.manager().acquire(request, signal());
        expect(out).toEqual({ ok: false, reason: "sandbox_busy" });
        if (out.ok) throw new Error("unreachable");
        expect(acquireRefusalError(out)).toMatchObject({
          code: "unavailable",
          details: { reason: "sandbox_busy" },
        });
        await holder`rollback`;
      } finally {
        holder.release();
      }
      expect(await slow.sandboxes()).toEqual([]);
    } finally {
      await slow.cleanup();
    }
  });

  it("rejects a runtime scope id that is not a canonical uuid, and maps refusals to catalogue errors", async () => {
    const request = await scope();
    await expect(
      manager.acquire(
        { ...request, runtimeScopeId: request.runtimeScopeId.toUpperCase() },
        signal(),
      ),
    ).rejects.toMatchObject({ code: "invalid_request" });
    const mismatch = acquireRefusalError({
      ok: false,
      reason: "sandbox_identity_mismatch",
      liveWorkdirPath: "a",
    });
    expect(mismatch).toMatchObject({
      code: "conflict",
      details: { reason: "sandbox_identity_mismatch" },
    });
    expect(acquireRefusalError({ ok: false, reason: "node_quiesced" })).toMatchObject({
      code: "unavailable",
    });
  });

  describe("pins", () => {
    it("lets destroy wait for an exec that finishes within the drain", async () => {
      const { handle } = await acquireOk(await scope());
      const started = startedSignal();
      const exec = manager.exec(
        handle,
        { cmd: ["sh", "-c", "echo started; sleep 0.3; echo done"], onStdout: started.mark },
        signal(),
      );
      await started.seen; // the exec is in flight (pinned) when destroy begins
      const destroyed = await manager.destroy(handle, signal());
      const ran = await exec;
      expect(destroyed).toEqual({ ok: true });
      expect(ran.ok && ran.result).toMatchObject({ status: "exited", exitCode: 0 });
      expect(ran.ok && ran.result.stdout.bytes.toString()).toBe("started\ndone\n");
    });

    it("cancels an exec that outlives the drain, and refuses uses that arrive meanwhile", async () => {
      const { handle } = await acquireOk(await scope());
      const started = startedSignal();
      const exec = manager.exec(
        handle,
        { cmd: ["sh", "-c", "echo started; exec sleep 1000"], onStdout: started.mark },
        signal(),
      );
      await started.seen;
      const destroying = manager.destroy(handle, signal());
      // The destroy has claimed the generation (and is draining) before the late use.
      await expect
        .poll(async () => (await row(handle.sandboxId))?.state, { timeout: 20_000 })
        .toBe("destroying");
      const late = manager.exec(handle, { cmd: ["true"] }, signal());
      expect(await destroying).toEqual({ ok: true });
      const ran = await exec;
      expect(ran.ok && ran.result.status).toBe("cancelled");
      expect(await late).toEqual({ ok: false, reason: "stale_generation" });
      expect(await world.sandboxes()).toEqual([]);
    });
  });

  describe("failure cleanup", () => {
    it("marks the row failed and starts nothing when the Workdir is missing", async () => {
      const request = {
        uid: "alice",
        runtimeScopeId: randomUUID(),
        workdirPath: `projects/${randomUUID()}`,
      };
      await materializeWorkdir(world.dataRoot.path, "alice", "other");
      const out = await manager.acquire(request, signal());
      expect(out).toMatchObject({ ok: false, reason: "workdir_missing" });
      expect(await row(sandboxId(request.uid, request.runtimeScopeId))).toMatchObject({
        state: "failed",
      });
      expect(await world.sandboxes()).toEqual([]);
    });

    it("marks the row failed and leaves no container when the engine fails", async () => {
      const request = await scope();
      const broken = world.manager({
        ...world.driver,
        create: async () => {
          throw new Error("engine exploded");
        },
        inspect: (id, s) => world.driver.inspect(id, s),
        exec: (r, q, s) => world.driver.exec(r, q, s),
        destroy: (r, s) => world.driver.destroy(r, s),
        list: (n, s) => world.driver.list(n, s),
      });
      await expect(broken.acquire(request, signal())).rejects.toThrow("engine exploded");
      const failed = await row(sandboxId(request.uid, request.runtimeScopeId));
      expect(failed).toMatchObject({ state: "failed" });
      expect(await world.sandboxes()).toEqual([]);
      // The next acquire starts over with a new generation.
      const next = await acquireOk(request);
      expect(next.handle.generation).toBeGreaterThan(failed?.generation ?? 0);
    });
  });
});
