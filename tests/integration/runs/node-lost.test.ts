import { afterEach, beforeEach, expect, it } from "vitest";
import { sandboxId } from "../../../shared/identity/sandbox-id.ts";
import { type ExpiredScope, failExpiredLeases } from "../../../shared/runs/fail-expired-leases.ts";
import { pollFor } from "../../support/poll-until.ts";
import { containersOfNode } from "../sandbox/sandbox-fixture.ts";
import { expectGapFree, type RunWorld, runWorld, TEST_LIMITS, UID } from "./run-harness.ts";
import { startWorkerProcesses, type WorkerProcess } from "./worker-process.ts";

let world: RunWorld;
const workers: WorkerProcess[] = [];

beforeEach(async () => {
  world = await runWorld();
});
afterEach(async () => {
  await Promise.all(workers.splice(0).map((w) => w.kill9()));
  await world.cleanup();
});

it("kill -9 mid-run: the lease expires, the run ends failed/node_lost, the reconciler removes its sandbox", async () => {
  const [worker] = await startWorkerProcesses(world, [world.nodeId], {
    ...TEST_LIMITS,
    leaseTtlMs: 2_000,
    heartbeatIntervalMs: 300,
  });
  if (worker === undefined) throw new Error("no worker");
  workers.push(worker);
  const thread = await world.thread(await world.project());
  const runId = await world.submit(thread, "sleep 3132");
  await world.waitForEvent(runId, "tool.started");
  expect(await containersOfNode(world.docker, world.nodeId)).toHaveLength(1);

  await worker.kill9();
  // Nothing has expired yet right after the kill… (the lease is still in the future)
  expect((await world.run(runId)).status).toBe("running");

  // …until the lease runs out; then the control plane's sweeper call ends it.
  const swept: ExpiredScope[] = await pollFor(
    () => failExpiredLeases(world.db),
    (scopes) => scopes.length > 0,
    { what: "the expired lease to be swept", timeoutMs: 20_000, intervalMs: 200 },
  );
  expect(swept).toEqual([
    {
      uid: UID,
      runtimeScopeId: thread,
      sandboxId: sandboxId(UID, thread),
      runIds: [runId],
      releasedSandbox: { generation: expect.any(Number), nodeId: world.nodeId },
    },
  ]);
  const run = await world.run(runId);
  expect(run.status).toBe("failed");
  expect(run.error?.code).toBe("node_lost");
  const events = await world.events(runId);
  expectGapFree(events);
  expect(events.at(-1)?.data).toMatchObject({ status: "failed", error: { code: "node_lost" } });
  // A second sweep finds nothing: ended once.
  expect(await failExpiredLeases(world.db)).toEqual([]);

  // The node restarts: its fresh manager's reconciler removes the orphaned sandbox.
  const report = await world.manager().reconcile(AbortSignal.timeout(60_000));
  expect(report.destroyed).toHaveLength(1);
  expect(await containersOfNode(world.docker, world.nodeId)).toHaveLength(0);
});
