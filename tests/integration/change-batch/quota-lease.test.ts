import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { sql } from "drizzle-orm";
import { pino } from "pino";
import { afterEach, beforeEach, expect, test } from "vitest";
import { createRunQuotaGate } from "../../../agent-host/quota/run-quota-gate.ts";
import { createAccountingQuota } from "../../../agent-host/quota/workspace-quota.ts";
import { LeasedCommands } from "../../../agent-host/runs/change-batch/leased-commands.ts";
import { RepairRecords } from "../../../agent-host/runs/change-batch/repair-records.ts";
import { TreeBatches } from "../../../agent-host/runs/change-batch/tree-batches.ts";
import { ExecutionLeases } from "../../../agent-host/runs/execution-lease/execution-leases.ts";
import { LeaseWakeups } from "../../../agent-host/runs/execution-lease/lease-wakeups.ts";
import {
  createLibcSyscalls,
  createPathResolver,
  createUserWorkspaces,
} from "../../../agent-host/workspace/index.ts";
import { putLimitsOverride } from "../../../functions/limits/user-limits-store.ts";
import { createDb, type Db } from "../../../shared/db/client.ts";
import { executeRows } from "../../../shared/db/execute-rows.ts";
import { domainReasonOf } from "../../../shared/errors/domain-errors.ts";
import { uidDirname } from "../../../shared/paths/uid-dirname.ts";
import { type DataRoot, freshDataRoot } from "../../support/data-root.ts";
import { freshDatabase, type TestDatabase } from "../../support/postgres.ts";
import { seedRunningRun } from "../execution-lease/seed-runs.ts";

// A command's quota check and its Execution Lease are one statement (docs/decisions/0067):
// the uid's limits are read by the statement that arrives for the lease, and it arrives
// only within them. Real Postgres, real files, the gate agent-host.ts wires.

const logger = pino({ level: "silent" });
const UID = "dora";
const WORKDIR = "code/repo";

let database: TestDatabase;
let dataRoot: DataRoot;
let db: Db;

beforeEach(async () => {
  database = await freshDatabase();
  dataRoot = await freshDataRoot();
  db = createDb(database.sql);
  const workdir = join(dataRoot.path, "users", uidDirname(UID), "workspace", WORKDIR);
  await mkdir(workdir, { recursive: true });
  await writeFile(join(workdir, "data.bin"), Buffer.alloc(8 * 1024));
});
afterEach(async () => {
  await database.drop();
  await dataRoot.remove();
});

function commands(): LeasedCommands {
  const sys = createLibcSyscalls();
  const accounting = createAccountingQuota({ dataRoot: dataRoot.path });
  return new LeasedCommands({
    db,
    leases: new ExecutionLeases({
      db,
      nodeId: "n1",
      wakeups: new LeaseWakeups({ logger }),
      pollIntervalMs: 100,
      statementTimeoutMs: 5_000,
      logger,
    }),
    repairs: new RepairRecords(dataRoot.path),
    userWorkspaces: createUserWorkspaces({
      dataRoot: dataRoot.path,
      sys,
      resolver: createPathResolver(sys),
    }),
    limits: { scan: { maxEntries: 10_000, maxDepth: 16, timeoutMs: 30_000 }, maxBatchItems: 1_000 },
    logger,
    quota: createRunQuotaGate({ db, accounting, logger }),
  });
}

const leaseRows = () =>
  executeRows(
    db,
    sql`select uid from execution_leases union all select uid from execution_lease_roots`,
  );

test("a limit lowered between two commands refuses the next one without a lease; raised again, the one after runs", async () => {
  const fence = await seedRunningRun(db, { uid: UID });
  const leased = commands();
  const scope = { fence, workdirPath: WORKDIR, tree: new TreeBatches(fence.runId) };
  const signal = new AbortController().signal;
  let ran = 0;
  const body = async () => {
    ran++;
    return "ok";
  };

  // No limits row: the deployment's defaults, far above 8 KiB.
  const first = await leased.run(scope, { tool: "bash", command: "one" }, signal, body);
  expect(first.value).toBe("ok");
  expect(ran).toBe(1);
  await db.execute(sql`delete from execution_lease_roots`);

  await putLimitsOverride(db, UID, { workspace_bytes: 1024 });
  const refused = await leased.run(scope, { tool: "bash", command: "two" }, signal, body).then(
    () => undefined,
    (error: unknown) => error,
  );
  expect(refused).toMatchObject({
    code: "quota_exceeded",
    details: { reason: "workspace_quota", limit_bytes: 1024 },
  });
  // Nothing happened: the body did not run, no lease row arrived or was granted, no batch.
  expect(ran).toBe(1);
  expect(await leaseRows()).toEqual([]);
  const batches = await executeRows<{ command: string }>(
    db,
    sql`select command from change_batches where run_id = ${fence.runId}`,
  );
  expect(batches.map((b) => b.command)).toEqual(["one"]);

  // The inode limit is read by the same statement.
  await putLimitsOverride(db, UID, { workspace_bytes: 1024 * 1024, workspace_inodes: 1 });
  await expect(
    leased.run(scope, { tool: "bash", command: "three" }, signal, body),
  ).rejects.toMatchObject({ code: "quota_exceeded", details: { limit_inodes: 1 } });
  expect(ran).toBe(1);
  expect(await leaseRows()).toEqual([]);

  await putLimitsOverride(db, UID, { workspace_bytes: 1024 * 1024, workspace_inodes: 1000 });
  const last = await leased.run(scope, { tool: "bash", command: "four" }, signal, body);
  expect(last.value).toBe("ok");
  expect(ran).toBe(2);
});

test("a run that is no longer live gets lease_lost, not a quota refusal, under its limits", async () => {
  const fence = await seedRunningRun(db, { uid: UID });
  await db.execute(
    sql`update agent_runs set lease_expires_at = now() - interval '1 minute' where run_id = ${fence.runId}`,
  );
  let ran = false;
  await expect(
    commands().run(
      { fence, workdirPath: WORKDIR, tree: new TreeBatches(fence.runId) },
      { tool: "bash", command: "late" },
      new AbortController().signal,
      async () => {
        ran = true;
      },
    ),
  ).rejects.toSatisfy((error) => domainReasonOf(error) === "lease_lost");
  expect(ran).toBe(false);
  expect(await leaseRows()).toEqual([]);
});
