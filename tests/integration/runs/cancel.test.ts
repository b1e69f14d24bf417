import { afterEach, beforeEach, expect, it } from "vitest";
import type { RunSandboxes } from "../../../agent-host/runs/index.ts";
import { expectGapFree, type RunWorld, runWorld } from "./run-harness.ts";
import { scriptedModels, toolOutputs } from "./scripted-models.ts";

let world: RunWorld;

beforeEach(async () => {
  world = await runWorld();
});
afterEach(async () => {
  await world.cleanup();
});

// A duration no other test uses, so `ps` finds only ours.
const SLEEP = "sleep 3131";
const PS_SLEEPS = `ps -o args | grep -c '^${SLEEP}' || true`;

/**
 * The node's manager, except that right before a sandbox is destroyed it lists the
 * processes still running inside: proof that a cancel killed the exec itself, not merely
 * the container around it.
 */
function psBeforeDestroy(world: RunWorld): { sandboxes: RunSandboxes; seen: string[] } {
  const seen: string[] = [];
  const manager = world.sandboxManager;
  return {
    seen,
    sandboxes: {
      acquire: (request, signal) => manager.acquire(request, signal),
      exec: (handle, request, signal) => manager.exec(handle, request, signal),
      keepWarm: (handle, db) => manager.keepWarm(handle, db),
      evictWarm: (uid, signal) => manager.evictWarm(uid, signal),
      async destroy(handle, signal) {
        const out = await manager.exec(handle, { cmd: ["/bin/sh", "-c", PS_SLEEPS] }, signal);
        seen.push(out.ok ? out.result.stdout.bytes.toString("utf8").trim() : "stale");
        return manager.destroy(handle, signal);
      },
    },
  };
}

it("cancelling a root run during a long sleep kills it in the sandbox and cancels its child first", async () => {
  const models = scriptedModels((request) =>
    request.depth === 0
      ? [{ toolCalls: [{ name: "spawn_subagent", arguments: { task: "sleep a lot" } }] }]
      : [{ toolCalls: [{ name: "bash", arguments: { command: SLEEP } }] }],
  );
  const probe = psBeforeDestroy(world);
  // Heartbeats far apart: the cancel must arrive through LISTEN/NOTIFY.
  await world.worker({
    model: models.factory,
    limits: { heartbeatIntervalMs: 60_000, leaseTtlMs: 200_000 },
    extra: { sandboxManager: probe.sandboxes },
  });
  const thread = await world.thread(await world.project());
  const rootId = await world.submit(thread, "ROOT");
  await world.waitForEvent(rootId, "subagent.started");
  const [child] = await world.childRuns(rootId);
  if (!child) throw new Error("no child run");
  await world.waitForEvent(child.runId, "tool.started");

  await world.requestCancel(rootId);
  const root = await world.waitForRun(rootId, undefined, 20_000);
  const childEnd = await world.run(child.runId);
  expect(root.status).toBe("cancelled");
  expect(childEnd.status).toBe("cancelled");
  // Children end before their parent.
  expect(childEnd.finishedAt?.getTime()).toBeLessThanOrEqual(root.finishedAt?.getTime() ?? 0);

  const rootEvents = await world.events(rootId);
  expectGapFree(rootEvents);
  expect(rootEvents.at(-1)?.data).toEqual({ status: "cancelled" });
  expect(rootEvents.find((e) => e.type === "subagent.completed")?.data).toMatchObject({
    run_id: child.runId,
    status: "cancelled",
  });
  const childEvents = await world.events(child.runId);
  expectGapFree(childEvents);
  expect(childEvents.at(-1)?.data).toEqual({ status: "cancelled" });

  await world.waitForNoContainers();
  expect(probe.seen).toEqual(["0"]);
});

it("cancelling only the child: the sleep is gone from the shared sandbox and the parent carries on", async () => {
  const models = scriptedModels((request) =>
    request.depth === 0
      ? [
          { toolCalls: [{ name: "spawn_subagent", arguments: { task: "sleep a lot" } }] },
          { toolCalls: [{ name: "bash", arguments: { command: PS_SLEEPS } }] },
          { text: "parent done" },
        ]
      : [{ toolCalls: [{ name: "bash", arguments: { command: SLEEP } }] }],
  );
  await world.worker({ model: models.factory });
  const thread = await world.thread(await world.project());
  const rootId = await world.submit(thread, "ROOT");
  await world.waitForEvent(rootId, "subagent.started");
  const [child] = await world.childRuns(rootId);
  if (!child) throw new Error("no child run");
  await world.waitForEvent(child.runId, "tool.started");

  await world.requestCancel(child.runId);
  const root = await world.waitForRun(rootId);
  expect(root.status).toBe("succeeded");
  expect((await world.run(child.runId)).status).toBe("cancelled");
  const [spawnOutput, psOutput] = toolOutputs(await world.events(rootId));
  expect(spawnOutput).toContain("cancelled");
  expect(psOutput?.trim()).toBe("0");
});

it("without LISTEN, the heartbeat notices the cancel", async () => {
  await world.worker({ listen: false, limits: { heartbeatIntervalMs: 300 } });
  const thread = await world.thread(await world.project());
  const runId = await world.submit(thread, SLEEP);
  await world.waitForEvent(runId, "tool.started");
  await world.requestCancel(runId);
  const run = await world.waitForRun(runId, undefined, 20_000);
  expect(run.status).toBe("cancelled");
  expect(run.error).toBeNull();
  expectGapFree(await world.events(runId));
  await world.waitForNoContainers();
});
