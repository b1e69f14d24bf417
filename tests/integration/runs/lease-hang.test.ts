import type postgres from "postgres";
import { afterEach, beforeEach, expect, it } from "vitest";
import { createDb } from "../../../shared/db/client.ts";
import type { PausableProxy } from "../../support/pausable-proxy.ts";
import { proxiedPostgres } from "../../support/proxied-postgres.ts";
import { processesInSandbox } from "./processes-in-sandbox.ts";
import { type RunWorld, runWorld } from "./run-harness.ts";

// Issue 14 (3): a heartbeat that hangs (Postgres stops answering, the connection stays
// open) must count as failed. The worker's database goes through a TCP proxy the test
// pauses mid-run; the lease is declared lost by its timer within the TTL and the
// command in the sandbox is stopped, though no query ever returns an error.

let world: RunWorld;
let proxy: PausableProxy;
let client: postgres.Sql;

beforeEach(async () => {
  world = await runWorld();
  ({ proxy, client } = await proxiedPostgres(world.database.url));
});
afterEach(async () => {
  proxy.resume();
  await world.cleanup();
  await client.end({ timeout: 1 }).catch(() => {});
  await proxy.close();
});

it("a Postgres that stops answering during a run: the lease is lost within the TTL and the exec is stopped", async () => {
  await world.worker({
    listen: false,
    limits: { leaseTtlMs: 3_000, heartbeatIntervalMs: 500 },
    extra: { db: createDb(client) },
  });
  const thread = await world.thread(await world.project());
  const runId = await world.submit(thread, "sleep 3134");
  await world.waitForEvent(runId, "tool.started");
  const sleeping = await processesInSandbox(world, thread, "sleep 3134");
  // tool.started is recorded just before the exec: wait until the command runs.
  await expect.poll(sleeping, { timeout: 20_000 }).toBe("1");

  proxy.pause();
  // No query of the worker fails: they all hang. Only the lease's timer can decide.
  await expect.poll(sleeping, { timeout: 30_000, interval: 100 }).toBe("0");

  // The worker recorded nothing: the run is still `running` (the sweeper's to end), with
  // no tool.completed written by a worker that had lost its lease.
  const events = await world.events(runId);
  expect(events.map((e) => e.type)).not.toContain("tool.completed");
  expect((await world.run(runId)).status).toBe("running");
});
