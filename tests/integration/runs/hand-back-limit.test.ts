import { randomUUID } from "node:crypto";
import { afterEach, beforeEach, expect, it } from "vitest";
import { sandboxes } from "../../../shared/db/schema.ts";
import { sandboxId } from "../../../shared/identity/sandbox-id.ts";
import { registerNode } from "../sandbox/manager-fixture.ts";
import { containersOfNode } from "../sandbox/sandbox-fixture.ts";
import { type RunWorld, runWorld, UID } from "./run-harness.ts";

// Issue 14 (2): a run that can never be placed (its scope's live sandbox belongs to
// another node that keeps beating) is handed back a bounded number of times, then fails
// with a clear code; nothing of it ran here.

let world: RunWorld;

beforeEach(async () => {
  world = await runWorld();
});
afterEach(async () => {
  await world.cleanup();
});

it("after maxHandBacks hand-backs the run fails hand_back_limit, having run nothing", async () => {
  // Affinity off (decision 0113): with it, a claim leaves this run to the other node instead.
  await world.worker({ limits: { maxHandBacks: 2, handBackDelaySeconds: 0, affinityWaitMs: 0 } });
  const project = await world.project();
  const thread = await world.thread(project);
  const other = `other-${randomUUID()}`;
  await registerNode(world.db, other); // alive: its row has a fresh heartbeat
  await world.db.insert(sandboxes).values({
    sandboxId: sandboxId(UID, thread),
    uid: UID,
    runtimeScopeId: thread,
    workdirPath: project.workdirPath,
    nodeId: other,
    state: "running",
    instanceId: "container-on-the-other-node",
  });

  const runId = await world.submit(thread, "echo must-not-run");
  const run = await world.waitForRun(runId);
  expect(run).toMatchObject({ status: "failed", attempt: 3, error: { code: "hand_back_limit" } });
  expect(run.error?.message).toMatch(/handed back 2 times.*sandbox_on_other_node/);
  const events = await world.events(runId);
  expect(events.map((e) => e.type)).not.toContain("tool.started");
  expect(events.at(-1)?.type).toBe("run.completed");
  expect(await containersOfNode(world.docker, world.nodeId)).toEqual([]);
});
