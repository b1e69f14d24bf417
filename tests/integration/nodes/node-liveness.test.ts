import { randomUUID } from "node:crypto";
import { eq, sql } from "drizzle-orm";
import postgres from "postgres";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { NodeHeartbeat } from "../../../agent-host/node/node-heartbeat.ts";
import { createDb } from "../../../shared/db/client.ts";
import { nodes } from "../../../shared/db/schema/nodes.ts";
import { agentRuns, sandboxes } from "../../../shared/db/schema.ts";
import { sandboxId } from "../../../shared/identity/sandbox-id.ts";
import { failRunsOfNode } from "../../../shared/runs/fail-node-runs.ts";
import { claimParkedRun } from "../../support/claim-parked-run.ts";
import { startPausableProxy } from "../../support/pausable-proxy.ts";
import { type RunWorld, runWorld, UID } from "../runs/run-harness.ts";
import { registerNode } from "../sandbox/manager-fixture.ts";
import { containersOfNode, materializeWorkdir, silentLogger } from "../sandbox/sandbox-fixture.ts";

// Node liveness (docs/architecture.md §10) on real Postgres and Docker: a lost node's sandbox
// row no longer holds its scope, a restarted node removes (never adopts) what its dead
// runs used, and the heartbeat is bounded even when Postgres stops answering.

const signal = () => AbortSignal.timeout(60_000);
let world: RunWorld;

beforeEach(async () => {
  world = await runWorld();
});
afterEach(async () => {
  await world.cleanup();
});

async function nodeRow(nodeId: string) {
  const [row] = await world.db.select().from(nodes).where(eq(nodes.nodeId, nodeId));
  if (row === undefined) throw new Error(`no node ${nodeId}`);
  return row;
}

async function scopeOf() {
  const project = await world.project();
  const thread = await world.thread(project);
  await materializeWorkdir(world.dataRoot.path, UID, project.workdirPath);
  return { uid: UID, runtimeScopeId: thread, workdirPath: project.workdirPath };
}

describe("acquire and a sandbox row of another node", () => {
  it("a lost node's row is replaced here with a new generation; a live node's is refused and untouched", async () => {
    const other = `other-${randomUUID()}`;
    await registerNode(world.db, other);
    const request = await scopeOf();
    const id = sandboxId(UID, request.runtimeScopeId);
    await world.db.insert(sandboxes).values({
      sandboxId: id,
      uid: UID,
      runtimeScopeId: request.runtimeScopeId,
      workdirPath: request.workdirPath,
      nodeId: other,
      state: "running",
      instanceId: "container-on-the-other-node",
    });
    const [before] = await world.db.select().from(sandboxes).where(eq(sandboxes.sandboxId, id));

    // The other node beats: its sandbox is its own, this node takes nothing.
    expect(await world.sandboxManager.acquire(request, signal())).toEqual({
      ok: false,
      reason: "sandbox_on_other_node",
      nodeId: other,
    });
    const [untouched] = await world.db.select().from(sandboxes).where(eq(sandboxes.sandboxId, id));
    expect(untouched).toEqual(before);
    expect(await containersOfNode(world.docker, world.nodeId)).toEqual([]);

    // Past the node TTL it is lost: the scope starts fresh here.
    await world.db
      .update(nodes)
      .set({ heartbeatAt: sql`now() - interval '1 hour'` })
      .where(eq(nodes.nodeId, other));
    const out = await world.sandboxManager.acquire(request, signal());
    if (!out.ok) throw new Error(`refused: ${out.reason}`);
    expect(out.created).toBe(true);
    expect(out.handle.generation).toBeGreaterThan(before?.generation ?? 0);
    const [now] = await world.db.select().from(sandboxes).where(eq(sandboxes.sandboxId, id));
    expect(now).toMatchObject({ nodeId: world.nodeId, state: "running" });
    expect(await containersOfNode(world.docker, world.nodeId)).toHaveLength(1);
  });
});

describe("a node that comes back", () => {
  it("ends the runs its dead process left running and removes their sandbox instead of adopting it; a warm sandbox is adopted", async () => {
    const busy = await scopeOf();
    const warm = await scopeOf();
    const runId = await world.commitRun(busy.runtimeScopeId, "was running when the node died");
    const claim = await claimParkedRun(world.db, {
      runId,
      nodeId: world.nodeId,
      leaseTtlMs: 3_600_000,
    });
    expect(claim.ok).toBe(true);
    const busyOut = await world.sandboxManager.acquire(busy, signal());
    const warmOut = await world.sandboxManager.acquire(warm, signal());
    if (!busyOut.ok || !warmOut.ok) throw new Error("refused");
    // The process dies here (its manager is simply never used again).

    const restarted = world.manager();
    const ended = await failRunsOfNode(world.db, world.nodeId);
    expect(ended.map((s) => s.runIds)).toEqual([[runId]]);
    expect(await world.run(runId)).toMatchObject({
      status: "failed",
      error: { code: "node_lost" },
    });
    const report = await restarted.start(signal());
    expect(report.adopted).toEqual([warmOut.handle.instanceId]);
    expect(report.destroyed).toEqual([busyOut.handle.instanceId]);
    const left = await containersOfNode(world.docker, world.nodeId);
    expect(left.map((c) => c.Id)).toEqual([warmOut.handle.instanceId]);

    // The scope's next run gets a new generation, not the dead run's processes.
    const next = await restarted.acquire(busy, signal());
    if (!next.ok) throw new Error("refused");
    expect(next.created).toBe(true);
    expect(next.handle.generation).toBeGreaterThan(busyOut.handle.generation);
    // Nothing else of the node's: a second pass ends nothing.
    expect(await failRunsOfNode(world.db, world.nodeId)).toEqual([]);
  });
});

describe("node heartbeat", () => {
  it("writes the tiers, live sandboxes and running runs, follows the operator's state, and a clean stop marks the node stopped", async () => {
    const request = await scopeOf();
    const out = await world.sandboxManager.acquire(request, signal());
    if (!out.ok) throw new Error("refused");
    const runId = await world.commitRun(request.runtimeScopeId, "counted");
    expect(
      (await claimParkedRun(world.db, { runId, nodeId: world.nodeId, leaseTtlMs: 60_000 })).ok,
    ).toBe(true);
    const states: string[] = [];
    const beat = new NodeHeartbeat({
      db: world.db,
      nodeId: world.nodeId,
      intervalMs: 60_000,
      beatTimeoutMs: 5_000,
      nodeTtlMs: 30_000,
      tiers: async () => ["container"],
      onState: async (state) => {
        states.push(state);
      },
      logger: silentLogger,
    });
    await world.db
      .update(nodes)
      .set({ heartbeatAt: sql`now() - interval '1 hour'` })
      .where(eq(nodes.nodeId, world.nodeId));
    await beat.start();
    try {
      const row = await nodeRow(world.nodeId);
      expect(row).toMatchObject({ sandboxTiers: ["container"], liveSandboxes: 1, runningRuns: 1 });
      expect(Date.now() - row.heartbeatAt.getTime()).toBeLessThan(60_000);
      expect(beat.fresh).toBe(true);

      // An operator quiesces the node (what POST /v1/admin/nodes/{id}/quiesce writes).
      await world.db.update(nodes).set({ state: "quiesced" }).where(eq(nodes.nodeId, world.nodeId));
      await beat.beat();
      expect(states).toEqual(["active", "quiesced"]);
    } finally {
      await beat.stop({ markStopped: true });
    }
    const stopped = await nodeRow(world.nodeId);
    expect(stopped.stoppedAt).not.toBeNull();
    expect(stopped).toMatchObject({ liveSandboxes: 0, runningRuns: 0, sandboxTiers: [] });
  });

  it("a Postgres that stops answering: each beat gives up at its bound, the node stops being fresh after the TTL, and recovers", async () => {
    const target = new URL(world.database.url);
    const proxy = await startPausableProxy({ host: target.hostname, port: Number(target.port) });
    const via = new URL(world.database.url);
    via.port = String(proxy.port);
    const client = postgres(via.toString(), { max: 2, onnotice: () => {} });
    const beat = new NodeHeartbeat({
      db: createDb(client),
      nodeId: world.nodeId,
      intervalMs: 60_000,
      beatTimeoutMs: 300,
      nodeTtlMs: 1_500,
      tiers: async () => ["container"],
      logger: silentLogger,
    });
    try {
      await beat.start();
      expect(beat.fresh).toBe(true);
      const before = (await nodeRow(world.nodeId)).heartbeatAt;

      proxy.pause();
      // Each beat returns (it does not hang on the stalled connection)…
      await beat.beat();
      expect((await nodeRow(world.nodeId)).heartbeatAt).toEqual(before);
      // …and once no beat succeeded for the TTL, the node is no longer fresh.
      const deadline = performance.now() + 20_000;
      while (beat.fresh && performance.now() < deadline) await beat.beat();
      expect(beat.fresh).toBe(false);

      proxy.resume();
      const recovered = performance.now() + 20_000;
      while (!beat.fresh && performance.now() < recovered) await beat.beat();
      expect(beat.fresh).toBe(true);
      const after = await world.db
        .select({ at: nodes.heartbeatAt })
        .from(nodes)
        .where(eq(nodes.nodeId, world.nodeId));
      expect(after[0]?.at.getTime()).toBeGreaterThanOrEqual(before.getTime());
    } finally {
      await beat.stop();
      await client.end({ timeout: 1 }).catch(() => {});
      await proxy.close();
    }
  });
});

describe("run rows", () => {
  it("the restart helper touches only this node's running runs", async () => {
    const other = `other-${randomUUID()}`;
    await registerNode(world.db, other);
    const scope = await scopeOf();
    const theirs = await world.commitRun(scope.runtimeScopeId, "another node's");
    expect(
      (await claimParkedRun(world.db, { runId: theirs, nodeId: other, leaseTtlMs: 60_000 })).ok,
    ).toBe(true);
    expect(await failRunsOfNode(world.db, world.nodeId)).toEqual([]);
    const [row] = await world.db.select().from(agentRuns).where(eq(agentRuns.runId, theirs));
    expect(row?.status).toBe("running");
  });
});
