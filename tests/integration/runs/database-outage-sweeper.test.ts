import { readFile } from "node:fs/promises";
import { join } from "node:path";
import type postgres from "postgres";
import { afterEach, beforeEach, expect, it } from "vitest";
import type { ScriptedStep } from "../../../agent-host/runs/agent/index.ts";
import { createSqsRunQueue } from "../../../functions/queue/sqs-run-queue.ts";
import { type DatabaseUptime, databaseUptime } from "../../../functions/runs/database-uptime.ts";
import { sweepRuns } from "../../../functions/runs/sweep-runs.ts";
import { createDb, type Db } from "../../../shared/db/client.ts";
import { uidDirname } from "../../../shared/paths/uid-dirname.ts";
import type { PausableProxy } from "../../support/pausable-proxy.ts";
import { pollFor, pollUntil } from "../../support/poll-until.ts";
import { proxiedPostgres } from "../../support/proxied-postgres.ts";
import { silentLogger } from "../sandbox/sandbox-fixture.ts";
import { type Project, type RunWorld, runWorld, UID } from "./run-harness.ts";
import { gate, scriptedModels } from "./scripted-models.ts";

// Issue 38, decision 0149: after an outage longer than the run lease, the sweeper (which
// lost the database too) reaches it again before the run's node has beaten. It must not
// end the run node_lost then: it waits a lease TTL since it saw the database back. The
// worker and the sweeper reach PostgreSQL through two proxies the test cuts together and
// restores sweeper first, so the sweeper is always first (without the grace it ends the
// run at once); a node that stays away is still swept once the grace has passed.

let world: RunWorld;
let workerProxy: PausableProxy;
let sweeperProxy: PausableProxy;
let clients: postgres.Sql[];
let sweeperDb: Db;
let uptime: DatabaseUptime;

const LIMITS = {
  leaseTtlMs: 4_000,
  heartbeatIntervalMs: 500,
  databaseRetryAttemptMs: 1_000,
  databaseRetryMaxDelayMs: 300,
};

/** The model's second turn: waits for `release`, then runs `command`. */
function thenRun(release: Promise<void>, command: string): ScriptedStep {
  return {
    respond: async (_request, signal) => {
      await Promise.race([
        release,
        new Promise((resolve) => signal.addEventListener("abort", resolve)),
      ]);
      signal.throwIfAborted();
      return {
        ok: true,
        turn: {
          message: {
            role: "assistant",
            content: "",
            toolCalls: [{ id: "second", name: "bash", arguments: JSON.stringify({ command }) }],
          },
          finishReason: "tool_calls",
        },
      };
    },
  };
}

let release: ReturnType<typeof gate>;
let models: ReturnType<typeof scriptedModels>;

/** A client of the database through its own cut proxy (tests/support/proxied-postgres.ts). */
async function proxiedClient(): Promise<{ proxy: PausableProxy; client: postgres.Sql }> {
  const proxied = await proxiedPostgres(world.database.url);
  clients.push(proxied.client);
  return proxied;
}

beforeEach(async () => {
  world = await runWorld();
  clients = [];
  const worker = await proxiedClient();
  const sweeper = await proxiedClient();
  workerProxy = worker.proxy;
  sweeperProxy = sweeper.proxy;
  sweeperDb = createDb(sweeper.client);
  uptime = databaseUptime();
  release = gate();
  models = scriptedModels(() => [
    { toolCalls: [{ name: "bash", arguments: { command: "echo one >> grace.txt" } }] },
    thenRun(release.promise, "echo two >> grace.txt"),
    { text: "done" },
  ]);
  await world.worker({
    listen: false,
    limits: LIMITS,
    model: models.factory,
    extra: { db: createDb(worker.client) },
  });
});
afterEach(async () => {
  workerProxy.resume();
  sweeperProxy.resume();
  release.open();
  await world.cleanup();
  for (const client of clients) await client.end({ timeout: 1 }).catch(() => {});
  await workerProxy.close();
  await sweeperProxy.close();
});

/** One sweep of the control plane's loop: this sweeper's uptime kept across calls. */
const sweep = () =>
  sweepRuns(
    {
      db: sweeperDb,
      runQueue: createSqsRunQueue({ sqs: world.sqs, queueUrl: world.queueUrl }),
      logger: silentLogger,
      leaseTtlMs: LIMITS.leaseTtlMs,
      nodeTtlMs: LIMITS.leaseTtlMs,
      uptime,
    },
    AbortSignal.timeout(10_000),
  );

async function dbNow(): Promise<number> {
  const [row] = await world.database.sql<{ now: Date }[]>`select now() as now`;
  return new Date(row?.now ?? Number.NaN).getTime();
}

async function leaseLeftMs(runId: string): Promise<number> {
  const [row] = await world.database.sql<{ left: number }[]>`
    select extract(epoch from lease_expires_at - now()) * 1000 as left
    from agent_runs where run_id = ${runId}`;
  return Number(row?.left);
}

const fileOf = (project: Project) =>
  join(
    world.dataRoot.path,
    "users",
    uidDirname(UID),
    "workspace",
    project.workdirPath,
    "grace.txt",
  );

/**
 * Runs the first command, cuts the database for worker and sweeper (a sweep fails
 * meanwhile) until the lease expired in the database's clock, then gives it back to the
 * sweeper only. Returns the database time just before that.
 */
async function outageSeenBySweeper(): Promise<[string, Project, number]> {
  const project = await world.project();
  const runId = await world.submit(await world.thread(project), "two commands");
  await pollUntil(() => (models.clients[0]?.client.requests.length ?? 0) >= 2, 30_000);
  workerProxy.cut();
  sweeperProxy.cut();
  await expect(sweep()).rejects.toThrow();
  await pollUntil(async () => (await leaseLeftMs(runId)) < -LIMITS.heartbeatIntervalMs, 30_000);
  const backAt = await dbNow();
  sweeperProxy.resume();
  return [runId, project, backAt];
}

it("the sweeper back first after an outage past the lease waits its grace: the run completes on its first attempt", async () => {
  const [runId, project] = await outageSeenBySweeper();
  // The database is back for the sweeper, the lease is long expired, the node has not
  // beaten yet: without the grace this sweep ends the run node_lost.
  const first = await sweep();
  expect(first.nodeLost).toEqual([]);
  expect(first.lostNodes.scopes).toEqual([]);
  expect(await world.run(runId)).toMatchObject({ status: "running", attempt: 1 });

  workerProxy.resume();
  release.open();
  // The node's beat renews the lease within the grace; sweeps go on meanwhile.
  const run = await pollFor(
    async () => {
      await sweep();
      return world.run(runId);
    },
    (r) => r.status !== "running",
    { timeoutMs: 40_000, intervalMs: 200, what: "the run to end" },
  );
  expect(run).toMatchObject({ status: "succeeded", attempt: 1, error: null });
  expect(await readFile(fileOf(project), "utf8")).toBe("one\ntwo\n");
});

it("a node that stays away is still swept, once the grace has passed in the database's clock", async () => {
  const [runId, project, backAt] = await outageSeenBySweeper();
  const first = await sweep();
  expect([...first.lostNodes.scopes, ...first.nodeLost]).toEqual([]);

  const ended = await pollFor(
    async () => {
      const swept = await sweep();
      return [...swept.lostNodes.scopes, ...swept.nodeLost].flatMap((scope) => scope.runIds);
    },
    (ids) => ids.length > 0,
    { timeoutMs: 40_000, intervalMs: 200, what: "the sweeper to end the silent node's run" },
  );
  expect(ended).toEqual([runId]);
  const run = await world.run(runId);
  expect(run).toMatchObject({ status: "failed", attempt: 1, error: { code: "node_lost" } });
  // Not before a whole lease TTL after the database came back for the sweeper.
  expect(new Date(run.finishedAt ?? 0).getTime() - backAt).toBeGreaterThanOrEqual(
    LIMITS.leaseTtlMs,
  );
  expect(await readFile(fileOf(project), "utf8")).toBe("one\n");
});
