import { renameSync } from "node:fs";
import { join } from "node:path";
import { sql } from "drizzle-orm";
import postgres from "postgres";
import { afterEach, beforeEach, expect, test } from "vitest";
import { beforeRunCheckpoint } from "../../../agent-host/checkpoints/before-run-checkpoint.ts";
import { Checkpoints } from "../../../agent-host/checkpoints/checkpoints.ts";
import { LeasedCommands } from "../../../agent-host/runs/change-batch/leased-commands.ts";
import { RepairRecords } from "../../../agent-host/runs/change-batch/repair-records.ts";
import { ExecutionLeases } from "../../../agent-host/runs/execution-lease/execution-leases.ts";
import { LeaseWakeups } from "../../../agent-host/runs/execution-lease/lease-wakeups.ts";
import { createUserWorkspaces } from "../../../agent-host/workspace/index.ts";
import { createDb, type Db } from "../../../shared/db/client.ts";
import { executeRows } from "../../../shared/db/execute-rows.ts";
import type { AgentRun } from "../../../shared/db/schema.ts";
import { postgresListen } from "../../../shared/listen/postgres-listen.ts";
import { pollUntil } from "../../support/poll-until.ts";
import { freshDatabase, type TestDatabase } from "../../support/postgres.ts";
import { testLogger } from "../../support/test-logger.ts";
import { seedRunningRun } from "../execution-lease/seed-runs.ts";
import { plantTree } from "./agent-trees.ts";
import { type StoreEnv, setupStore, UID, WORKDIR } from "./checkpoint-fixture.ts";
import { treeManifest } from "./tree-manifest.ts";

let database: TestDatabase;
let db: Db;
let env: StoreEnv;
const closers: (() => Promise<void>)[] = [];

beforeEach(async () => {
  database = await freshDatabase();
  db = createDb(database.sql);
  env = await setupStore("copy");
});
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
  await env.root.remove();
  await database.drop();
});

async function leasedCommands(): Promise<{ leases: ExecutionLeases; commands: LeasedCommands }> {
  const client = postgres(database.url, { max: 4, onnotice: () => {} });
  const logger = testLogger();
  const wakeups = new LeaseWakeups({ listen: postgresListen(client), logger });
  await wakeups.start();
  closers.push(async () => {
    await wakeups.stop();
    await client.end({ timeout: 2 });
  });
  const leases = new ExecutionLeases({
    db: createDb(client),
    nodeId: "node-a",
    wakeups,
    pollIntervalMs: 100,
    statementTimeoutMs: 5_000,
    logger,
  });
  const commands = new LeasedCommands({
    db,
    leases,
    repairs: new RepairRecords(env.root.path),
    userWorkspaces: createUserWorkspaces({
      dataRoot: env.root.path,
      sys: env.store.deps.sys,
      resolver: env.store.deps.resolver,
    }),
    limits: { scan: { maxEntries: 10_000, maxDepth: 64, timeoutMs: 10_000 }, maxBatchItems: 1_000 },
    logger,
  });
  return { leases, commands };
}

// The race: a command renames a file while the Workdir is being checkpointed. The
// before-run checkpoint holds the run's Execution Lease, so the other run's command (its
// lease) waits until the copy is done, and the checkpoint is the tree before the rename,
// never half of it.
test("a command of another run waits for a before-run checkpoint, which holds the tree from before it", async () => {
  plantTree(env.workdir);
  const before = treeManifest(env.workdir, true);
  const a = await seedRunningRun(db, { uid: UID, workdirPath: WORKDIR });
  const b = await seedRunningRun(db, { uid: UID, workdirPath: WORKDIR });
  const { leases, commands } = await leasedCommands();
  // The copy is held open mid-way (the quota read happens inside the take, under the lease).
  let release = () => {};
  const inside = new Promise<void>((resolve) => {
    release = resolve;
  });
  let reached = false;
  const checkpoints = new Checkpoints({
    db,
    store: env.store,
    nodeId: "node-a",
    workspaceBytes: async () => {
      reached = true;
      await inside;
      return 0;
    },
    defaultWorkspaceBytes: 1024 ** 3,
    logger: testLogger(),
  });
  const events: { type: string; data: unknown }[] = [];
  const run = { runId: a.runId, uid: UID, threadId: a.threadId } as AgentRun;
  const taking = beforeRunCheckpoint(checkpoints)(
    {
      run,
      fence: a,
      workdirPath: WORKDIR,
      agent: { checkpoint: true },
      events: { append: async (e) => void events.push(e) },
      logger: testLogger(),
    },
    commands,
    AbortSignal.timeout(60_000),
  );
  await pollUntil(() => reached, { timeoutMs: 30_000, intervalMs: 20 });

  // Run B's command asks for the same Workdir: it waits behind the checkpoint.
  let renamed = false;
  const command = leases.acquire(b, WORKDIR, AbortSignal.timeout(60_000)).then(async (acquired) => {
    if (!acquired.ok) throw new Error(`not granted: ${acquired.reason}`);
    renameSync(join(env.workdir, "a.txt"), join(env.workdir, "renamed.txt"));
    renamed = true;
    await leases.release(acquired.lease);
  });
  await pollUntil(
    async () =>
      (
        await executeRows<{ state: string }>(
          db,
          sql`select state from execution_leases where run_id = ${b.runId}`,
        )
      ).some((row) => row.state === "waiting"),
    { timeoutMs: 30_000, intervalMs: 20 },
  );
  expect(renamed).toBe(false);

  release();
  await taking;
  await command;
  expect(renamed).toBe(true);
  const created = events.find((e) => e.type === "checkpoint.created")?.data as {
    checkpoint_id: string;
  };
  expect(treeManifest(join(env.storeDir, created.checkpoint_id), true)).toEqual(before);
});
