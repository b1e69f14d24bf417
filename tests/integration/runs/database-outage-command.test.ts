import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { eq } from "drizzle-orm";
import type postgres from "postgres";
import { afterEach, beforeEach, expect, it } from "vitest";
import { createRunQuotaGate } from "../../../agent-host/quota/run-quota-gate.ts";
import { createAccountingQuota } from "../../../agent-host/quota/workspace-quota.ts";
import { SandboxManager } from "../../../agent-host/sandbox/lifecycle/sandbox-manager.ts";
import { createDb } from "../../../shared/db/client.ts";
import { changeBatches, executionLeases } from "../../../shared/db/schema.ts";
import { uidDirname } from "../../../shared/paths/uid-dirname.ts";
import type { PausableProxy } from "../../support/pausable-proxy.ts";
import { pollUntil } from "../../support/poll-until.ts";
import { proxiedPostgres } from "../../support/proxied-postgres.ts";
import { silentLogger } from "../sandbox/sandbox-fixture.ts";
import { expectGapFree, type Project, type RunWorld, runWorld, UID } from "./run-harness.ts";

// Issue 38, decision 0147: a PostgreSQL outage while a command's own statements run (its
// Execution Lease arrival, its sandbox's exec fence) must not fail the command: both are
// tried again until the database answers. The worker and the sandbox manager reach the
// database through a proxy that stops at one exact statement; the test cuts every
// connection there (the server is down) until a third of the run lease has passed in the
// database's clock, then lets it back. The run must end succeeded, claimed once, with its
// command run once and nothing left queued.

let world: RunWorld;
let proxy: PausableProxy;
let client: postgres.Sql;
let manager: SandboxManager;
/** The statement text the proxy stops before (undefined: forward everything). */
let stopBefore: string | undefined;

const LIMITS = {
  leaseTtlMs: 6_000,
  heartbeatIntervalMs: 500,
  databaseRetryAttemptMs: 1_000,
  databaseRetryMaxDelayMs: 300,
  changeRepairIntervalMs: 1_000,
};

beforeEach(async () => {
  world = await runWorld();
  stopBefore = undefined;
  ({ proxy, client } = await proxiedPostgres(world.database.url, {
    pauseBefore: (chunk) => {
      if (stopBefore === undefined || !chunk.includes(stopBefore)) return false;
      stopBefore = undefined;
      return true;
    },
  }));
  const db = createDb(client);
  manager = new SandboxManager({
    db,
    driver: world.driver,
    logger: silentLogger,
    nodeId: world.nodeId,
    config: world.config,
    databaseRetry: { attemptTimeoutMs: 1_000, maxDelayMs: 300, giveUpAfterMs: 60_000 },
  });
  // The workspace quota gate as agent-host wires it, reading its limits through the proxy.
  const quota = createRunQuotaGate({
    db,
    accounting: createAccountingQuota({ dataRoot: world.dataRoot.path }),
    logger: silentLogger,
  });
  await world.worker({
    listen: false,
    limits: LIMITS,
    extra: { db, sandboxManager: manager, quota },
  });
});
afterEach(async () => {
  proxy.resume();
  await world.cleanup();
  await manager.stop();
  await client.end({ timeout: 1 }).catch(() => {});
  await proxy.close();
});

/** The run's lease as the database sees it: ms left (negative: expired). */
async function leaseLeftMs(runId: string): Promise<number> {
  const [row] = await world.database.sql<{ left: number }[]>`
    select extract(epoch from lease_expires_at - now()) * 1000 as left
    from agent_runs where run_id = ${runId}`;
  return Number(row?.left);
}

/** Stops the database at `statement` during the run's command, down for a third of its lease. */
async function outageAt(statement: string, command: string): Promise<[string, Project]> {
  stopBefore = statement;
  const project = await world.project();
  const runId = await world.submit(await world.thread(project), command);
  await pollUntil(async () => proxy.stopped, 30_000);
  proxy.cut();
  await pollUntil(async () => (await leaseLeftMs(runId)) < LIMITS.leaseTtlMs * (2 / 3), 30_000);
  proxy.resume();
  return [runId, project];
}

async function expectSucceededOnce(runId: string, project: Project, line: string, attempt = 1) {
  const run = await world.waitForRun(runId);
  expect(run).toMatchObject({ status: "succeeded", attempt, error: null });
  const events = await world.events(runId);
  expectGapFree(events);
  expect(events.filter((e) => e.type === "tool.started")).toHaveLength(1);
  expect(events.filter((e) => e.type === "tool.completed")).toHaveLength(1);
  // The command's effect, exactly once.
  const file = join(
    world.dataRoot.path,
    "users",
    uidDirname(UID),
    "workspace",
    project.workdirPath,
    "once.txt",
  );
  expect(await readFile(file, "utf8")).toBe(`${line}\n`);
  await pollUntil(async () => {
    const batches = await world.db
      .select({ pendingRepair: changeBatches.pendingRepair })
      .from(changeBatches)
      .where(eq(changeBatches.runId, runId));
    return batches.length === 1 && batches[0]?.pendingRepair === false;
  }, 30_000);
  // Nothing left queued: no lease row of the run (a lost arrival would hold its root).
  expect(
    await world.db.select().from(executionLeases).where(eq(executionLeases.runId, runId)),
  ).toEqual([]);
}

it("PostgreSQL down at the command's Execution Lease arrival: the arrival waits for it and the run succeeds", async () => {
  const [runId, project] = await outageAt(
    "workcell_acquire_execution_lease",
    "echo arrived >> once.txt",
  );
  await expectSucceededOnce(runId, project, "arrived");
});

it("PostgreSQL down at the sandbox's exec fence: the fence waits for it, the command runs once after", async () => {
  const [runId, project] = await outageAt(
    'set "last_used_at" = now() where',
    "echo fenced >> once.txt",
  );
  await expectSucceededOnce(runId, project, "fenced");
});

it("PostgreSQL down at the run's workspace quota check: handed back (nothing ran), then it runs once", async () => {
  const [runId, project] = await outageAt('from "user_limits"', "echo checked >> once.txt");
  // Claimed twice: the first claim was handed back, not failed `unavailable`.
  await expectSucceededOnce(runId, project, "checked", 2);
});
