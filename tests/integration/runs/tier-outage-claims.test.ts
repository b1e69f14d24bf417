import { afterEach, beforeEach, expect, it } from "vitest";
import { claimWaitingRun } from "../../../agent-host/runs/claim/claim-waiting-run.ts";
import { parkRun } from "../../../agent-host/runs/fair-share/park-run.ts";
import { type RunWorld, runWorld } from "./run-harness.ts";

// Issue 38 (4), decision 0114: with one tier gone on a node (Docker's socket cut), the
// node's claims skip runs of that tier (and runs naming no tier, which get the node's
// default, the container tier) and go on claiming the tier that still answers.

let world: RunWorld;

beforeEach(async () => {
  world = await runWorld();
});
afterEach(async () => {
  await world.cleanup();
});

async function waiting(agent?: Record<string, unknown>): Promise<string> {
  const runId = await world.commitRun(await world.thread(await world.project()), "x", agent);
  expect((await parkRun(world.db, runId, world.nodeId)).ok).toBe(true);
  return runId;
}

const request = (tiers: string[]) => ({
  nodeId: world.nodeId,
  leaseTtlMs: 60_000,
  defaultMaxConcurrentRuns: 100,
  unavailable: { tiers, defaultTier: "container" },
});

it("the container tier gone: process-tier runs are claimed, container and default runs wait", async () => {
  const container = await waiting({ sandbox: "container" });
  const unnamed = await waiting();
  const process = await waiting({ sandbox: "process" });

  const first = await claimWaitingRun(world.db, request(["container"]));
  expect(first.ok && first.run.runId).toBe(process);
  expect(await claimWaitingRun(world.db, request(["container"]))).toEqual({
    ok: false,
    reason: "none",
  });
  // Nothing was touched: both still wait, unclaimed.
  for (const runId of [container, unnamed]) {
    expect(await world.run(runId)).toMatchObject({ status: "pending", attempt: 0 });
  }

  // The tier answers again: they are claimed, oldest first.
  const again = [
    await claimWaitingRun(world.db, request([])),
    await claimWaitingRun(world.db, request([])),
  ];
  expect(again.map((c) => c.ok && c.run.runId)).toEqual([container, unnamed]);
});
