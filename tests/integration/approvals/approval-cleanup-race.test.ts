import { existsSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { and, eq } from "drizzle-orm";
import { pino } from "pino";
import { afterEach, beforeEach, expect, it } from "vitest";
import { cleanupExecutionTree } from "../../../agent-host/runs/execute/tree-cleanup.ts";
import { handleFromRow } from "../../../agent-host/sandbox/sandbox-handle.ts";
import { sandboxes } from "../../../shared/db/schema.ts";
import { pollUntil } from "../../support/poll-until.ts";
import { type RunWorld, runWorld } from "../runs/run-harness.ts";
import { awaitPause, decide, effectCount, effectFile } from "./approval-world.ts";

// A paused run's tree cleanup runs after its slot is free (decision 0158), in a bounded
// pool: with many runs pausing at once it can come after the run was approved and claimed
// again. The resume then uses the sandbox the late cleanup is deciding about (found by the
// approvals bench: the cleanup released it, the uid's warm bound evicted it, the resumed
// command failed stale_generation). Decision 0175.

let world: RunWorld;

beforeEach(async () => {
  world = await runWorld({ keepWarmMs: 60_000 });
});
afterEach(async () => {
  await world.cleanup();
});

const ASK_BASH = { approvals: { tools: ["bash"] } };
/** Runs until the test writes outputs/go, so the cleanup is staged while it runs. */
const HELD_COMMAND =
  "mkdir -p outputs && touch outputs/started && while [ ! -f outputs/go ]; do sleep 0.05; done && echo ran >> outputs/effect.txt";

/** A run of HELD_COMMAND paused for its bash call, and a look at its scope's sandbox row. */
async function pausedHeldRun() {
  await world.worker();
  const project = await world.project();
  const runId = await world.submit(await world.thread(project), HELD_COMMAND, ASK_BASH);
  const approval = await awaitPause(world, runId);
  const { runtimeScopeId } = await world.run(runId);
  const scopeSandbox = async () => {
    const [row] = await world.db
      .select()
      .from(sandboxes)
      .where(and(eq(sandboxes.uid, project.uid), eq(sandboxes.runtimeScopeId, runtimeScopeId)));
    if (row === undefined) throw new Error("the scope has no sandbox row");
    return row;
  };
  return { project, runId, approval, runtimeScopeId, scopeSandbox };
}

it("the pause's late tree cleanup keeps the sandbox its own resume is using, and the command completes once", async () => {
  const { project, runId, approval, runtimeScopeId, scopeSandbox } = await pausedHeldRun();
  const paused = await scopeSandbox();

  await decide(world, project.uid, approval, { decision: "approve" });
  const outputs = dirname(effectFile(world, project));
  await pollUntil(() => existsSync(join(outputs, "started")), {
    what: "the resumed command to start",
  });
  const resumed = await scopeSandbox();
  // The warm sandbox of the pause was taken again, not a new one prepared.
  expect(resumed).toMatchObject({ generation: paused.generation, releasedAt: null });

  // The pause's cleanup, arriving now with the pause's handle.
  const handle = handleFromRow(paused);
  if (handle === undefined) throw new Error("the paused sandbox has no container");
  const out = await cleanupExecutionTree(
    {
      db: world.db,
      sandboxes: world.sandboxManager,
      logger: pino({ level: "silent" }),
      limits: { treeCleanupWaitMs: 5_000, treeCleanupPollMs: 100, sandboxDestroyTimeoutMs: 30_000 },
    },
    { runId, uid: project.uid, runtimeScopeId },
    handle,
    AbortSignal.timeout(30_000),
  );
  expect(out).toEqual({ kind: "kept", activeRuns: 1 });
  // Neither released for the keep-warm window (where the uid's bound could evict it) nor
  // destroyed: the resume still holds it.
  expect(await scopeSandbox()).toMatchObject({
    generation: paused.generation,
    state: "running",
    releasedAt: null,
  });

  writeFileSync(join(outputs, "go"), "");
  const ended = await world.waitForRun(runId);
  expect(ended.status).toBe("succeeded");
  expect(effectCount(world, project)).toBe(1);
});

it("a resume whose kept sandbox was evicted meanwhile gets a new generation that is in use, not marked warm", async () => {
  const { project, runId, approval, scopeSandbox } = await pausedHeldRun();
  // The pause's cleanup kept it warm; then it goes, as the uid's warm bound evicts it when
  // other runs of the user pause or end (the approvals bench's 1,000 waiting runs).
  await pollUntil(async () => (await scopeSandbox()).releasedAt !== null, {
    what: "the paused run's sandbox to be kept warm",
  });
  const paused = await scopeSandbox();
  const handle = handleFromRow(paused);
  if (handle === undefined) throw new Error("the paused sandbox has no container");
  expect(await world.sandboxManager.destroy(handle, AbortSignal.timeout(30_000))).toMatchObject({
    ok: true,
  });

  await decide(world, project.uid, approval, { decision: "approve" });
  const outputs = dirname(effectFile(world, project));
  await pollUntil(() => existsSync(join(outputs, "started")), {
    what: "the resumed command to start",
  });
  // A new generation, and not released: the eviction and the reaper, which take only
  // released generations, leave it to the resume (it carried the old mark before).
  const resumed = await scopeSandbox();
  expect(resumed.generation).toBeGreaterThan(paused.generation);
  expect(resumed).toMatchObject({ state: "running", releasedAt: null });

  writeFileSync(join(outputs, "go"), "");
  expect((await world.waitForRun(runId)).status).toBe("succeeded");
  expect(effectCount(world, project)).toBe(1);
});
