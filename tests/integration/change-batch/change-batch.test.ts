import { execFile } from "node:child_process";
import { cp, mkdir, readdir, rename, rm, utimes, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import { sql } from "drizzle-orm";
import { pino } from "pino";
import postgres from "postgres";
import { afterEach, beforeEach, describe, expect, test } from "vitest";
import { LeasedCommands } from "../../../agent-host/runs/change-batch/leased-commands.ts";
import { runRepairPass } from "../../../agent-host/runs/change-batch/repair-pass.ts";
import { RepairRecords } from "../../../agent-host/runs/change-batch/repair-records.ts";
import { TreeBatches } from "../../../agent-host/runs/change-batch/tree-batches.ts";
import { ExecutionLeases } from "../../../agent-host/runs/execution-lease/execution-leases.ts";
import { LeaseWakeups } from "../../../agent-host/runs/execution-lease/lease-wakeups.ts";
import {
  createLibcSyscalls,
  createPathResolver,
  createUserWorkspaces,
  type MetadataScanLimits,
  type UserWorkspaces,
} from "../../../agent-host/workspace/index.ts";
import { createDb, type Db } from "../../../shared/db/client.ts";
import { executeRows } from "../../../shared/db/execute-rows.ts";
import { uidDirname } from "../../../shared/paths/uid-dirname.ts";
import { type DataRoot, freshDataRoot } from "../../support/data-root.ts";
import { freshDatabase, type TestDatabase } from "../../support/postgres.ts";
import { seedRunningRun } from "../execution-lease/seed-runs.ts";
import { type OutageProxy, startOutageProxy } from "./outage-proxy.ts";

const logger = pino({ level: "silent" });
const runCommand = promisify(execFile);
const UID = "carol";
const WORKDIR = "code/repo";
const SCAN: MetadataScanLimits = { maxEntries: 200_000, maxDepth: 16, timeoutMs: 60_000 };

describe("change batches (real Postgres, real files)", () => {
  let database: TestDatabase;
  let dataRoot: DataRoot;
  let proxy: OutageProxy;
  let client: postgres.Sql;
  let db: Db;
  let workdir: string;

  beforeEach(async () => {
    database = await freshDatabase();
    dataRoot = await freshDataRoot();
    const url = new URL(database.url);
    proxy = await startOutageProxy({ host: url.hostname, port: Number(url.port) });
    url.port = String(proxy.port);
    // Through the proxy, so a test can take the database away mid-command.
    client = postgres(url.toString(), { max: 4, connect_timeout: 2, onnotice: () => {} });
    db = createDb(client);
    workdir = join(dataRoot.path, "users", uidDirname(UID), "workspace", WORKDIR);
    await mkdir(workdir, { recursive: true });
  });
  afterEach(async () => {
    await client.end({ timeout: 1 });
    await proxy.close();
    await database.drop();
    await dataRoot.remove();
  });

  function commands(scan: MetadataScanLimits = SCAN) {
    const sys = createLibcSyscalls();
    const wakeups = new LeaseWakeups({ logger });
    const repairs = new RepairRecords(dataRoot.path);
    const leased = new LeasedCommands({
      db,
      leases: new ExecutionLeases({
        db,
        nodeId: "n1",
        wakeups,
        pollIntervalMs: 100,
        statementTimeoutMs: 5_000,
        logger,
      }),
      repairs,
      userWorkspaces: countingWalks(
        createUserWorkspaces({
          dataRoot: dataRoot.path,
          sys,
          resolver: createPathResolver(sys),
        }),
      ),
      limits: { scan, maxBatchItems: 10_000 },
      logger,
    });
    return { leased, repairs };
  }

  /** Counts Workdir walks: every scan opens the Workdir once. */
  let walks = 0;
  function countingWalks(real: UserWorkspaces): Pick<UserWorkspaces, "openExistingWorkdir"> {
    return {
      openExistingWorkdir: (...args) => {
        walks++;
        return real.openExistingWorkdir(...args);
      },
    };
  }

  const itemsOf = (batchId: string) =>
    executeRows<{ path: string; change: string; size: number | null }>(
      createDb(database.sql),
      sql`select path, change, size::int as size from change_batch_items
          where batch_id = ${batchId} order by path collate "C"`,
    );

  test("add, modify, delete, rename and one file among 50,000 others are all in the batch", async () => {
    // The UserWorkspaces on a tmpfs of their own: creating and deleting 50,000 files on
    // the machine's ext4 took most of this test's minutes; the scans, the commit and
    // every assertion are the same on any real filesystem with d_type and ns ctimes.
    const users = join(dataRoot.path, "users");
    await runCommand("mount", ["-t", "tmpfs", "-o", "size=1g,mode=0755", "tmpfs", users]);
    try {
      await mkdir(workdir, { recursive: true });
      await editsAmongMany();
    } finally {
      await runCommand("umount", [users]);
    }
  }, 120_000);

  async function editsAmongMany(): Promise<void> {
    const many = join(workdir, "many");
    for (let d = 0; d < 50; d++) {
      const dir = join(many, `d${d}`);
      await mkdir(dir, { recursive: true });
      await Promise.all(
        Array.from({ length: 1000 }, (_, i) => writeFile(join(dir, `f${i}.txt`), "x")),
      );
    }
    await writeFile(join(workdir, "keep.txt"), "same");
    await writeFile(join(workdir, "edit.txt"), "aaaa");
    await writeFile(join(workdir, "gone.txt"), "bye");
    await writeFile(join(workdir, "old-name.txt"), "moving");
    const stamp = new Date("2020-01-01T00:00:00Z");
    await utimes(join(workdir, "edit.txt"), stamp, stamp);
    const fence = await seedRunningRun(createDb(database.sql), { uid: UID });
    const { leased } = commands();
    const { batch } = await leased.run(
      { fence, workdirPath: WORKDIR, tree: new TreeBatches(fence.runId) },
      { tool: "bash", command: "the edits" },
      new AbortController().signal,
      async () => {
        await writeFile(join(workdir, "added.txt"), "new!");
        // Same size and the old mtime put back (`touch -r`): only ctime tells.
        await writeFile(join(workdir, "edit.txt"), "bbbb");
        await utimes(join(workdir, "edit.txt"), stamp, stamp);
        await rm(join(workdir, "gone.txt"));
        await rename(join(workdir, "old-name.txt"), join(workdir, "new-name.txt"));
        await writeFile(join(many, "d37", "f512.txt"), "hidden among many");
      },
    );
    const expected = [
      { path: "added.txt", change: "added", size: 4 },
      { path: "edit.txt", change: "modified", size: 4 },
      { path: "gone.txt", change: "deleted", size: null },
      { path: "many/d37/f512.txt", change: "modified", size: 17 },
      { path: "new-name.txt", change: "added", size: 6 },
      { path: "old-name.txt", change: "deleted", size: null },
    ];
    expect(batch.truncated).toBe(false);
    expect(await itemsOf(batch.batchId)).toEqual(expected);
    expect(await executeRows(createDb(database.sql), sql`select * from execution_leases`)).toEqual(
      [],
    );
  }

  test("a tree's next command starts from its last after-scan only while nobody else held an overlapping root", async () => {
    const direct = createDb(database.sql);
    const a = await seedRunningRun(direct, { uid: UID });
    const b = await seedRunningRun(direct, { uid: UID });
    const treeA = new TreeBatches(a.runId);
    const { leased } = commands();
    const signal = new AbortController().signal;
    const inA = (command: string, body: () => Promise<unknown>) =>
      leased.run(
        { fence: a, workdirPath: WORKDIR, tree: treeA },
        { tool: "bash", command },
        signal,
        body,
      );
    const paths = async (batchId: string) =>
      (await itemsOf(batchId)).map((i) => `${i.change} ${i.path}`);

    walks = 0;
    const first = await inA("write a", () => writeFile(join(workdir, "a.txt"), "1"));
    expect(walks).toBe(2);
    expect(await paths(first.batch.batchId)).toEqual(["added a.txt"]);

    walks = 0;
    const second = await inA("edit a, add b", async () => {
      await writeFile(join(workdir, "a.txt"), "22");
      await writeFile(join(workdir, "b.txt"), "b");
    });
    expect(walks).toBe(1);
    expect(await paths(second.batch.batchId)).toEqual(["modified a.txt", "added b.txt"]);

    // Another run's command on an ancestor root: its writes are its batch, never ours,
    // so our next command walks again instead of trusting its kept scan.
    const other = await leased.run(
      { fence: b, workdirPath: "code", tree: new TreeBatches(b.runId) },
      { tool: "bash", command: "other run" },
      signal,
      async () => {
        await writeFile(join(workdir, "theirs.txt"), "t");
        await rm(join(workdir, "b.txt"));
      },
    );
    expect(await paths(other.batch.batchId)).toEqual([
      "deleted repo/b.txt",
      "added repo/theirs.txt",
    ]);
    walks = 0;
    const third = await inA("write c", () => writeFile(join(workdir, "c.txt"), "c"));
    expect(walks).toBe(2);
    expect(await paths(third.batch.batchId)).toEqual(["added c.txt"]);

    // A write that takes no lease (say a data-plane upload) between two commands of the
    // tree is never hidden: the next batch reports it (docs/decisions/0036).
    await writeFile(join(workdir, "uploaded.txt"), "u");
    walks = 0;
    const fourth = await inA("nothing", async () => {});
    expect(walks).toBe(1);
    expect(await paths(fourth.batch.batchId)).toEqual(["added uploaded.txt"]);
  });

  test("a Workdir past the scan bound gives a truncated batch, never a silently empty one", async () => {
    await Promise.all(
      Array.from({ length: 300 }, (_, i) => writeFile(join(workdir, `f${i}.txt`), "x")),
    );
    const fence = await seedRunningRun(createDb(database.sql), { uid: UID });
    const { leased } = commands({ ...SCAN, maxEntries: 100 });
    const { batch } = await leased.run(
      { fence, workdirPath: WORKDIR, tree: new TreeBatches(fence.runId) },
      { tool: "bash", command: "touch zzz.txt" },
      new AbortController().signal,
      () => writeFile(join(workdir, "zzz.txt"), "late in the listing"),
    );
    expect(batch.truncated).toBe(true);
    const [row] = await executeRows<{ truncated: boolean }>(
      createDb(database.sql),
      sql`select truncated from change_batches where batch_id = ${batch.batchId}`,
    );
    expect(row?.truncated).toBe(true);
  });

  test("a database outage during the commit keeps a repair record; the facts appear once", async () => {
    const fence = await seedRunningRun(createDb(database.sql), { uid: UID });
    const tree = new TreeBatches(fence.runId);
    const { leased, repairs } = commands();
    const { batch } = await leased.run(
      { fence, workdirPath: WORKDIR, tree },
      { tool: "bash", command: "echo > out.txt" },
      new AbortController().signal,
      async () => {
        await writeFile(join(workdir, "out.txt"), "made while the database went away");
        proxy.cut();
      },
    );
    const direct = createDb(database.sql);
    const batchRows = () =>
      executeRows<{ n: number }>(
        direct,
        sql`select count(*)::int as n from change_batches where run_id = ${fence.runId}`,
      );
    expect(await batchRows()).toEqual([{ n: 0 }]);
    expect(await repairs.has(batch.batchId)).toBe(true);
    expect(tree.unrepaired.map((b) => b.batchId)).toEqual([batch.batchId]);

    // Still down: the pass fails and keeps the record.
    const deps = { db, records: repairs, logger };
    expect(await runRepairPass(deps)).toEqual({ committed: 0, alreadyCommitted: 0, failed: 1 });
    expect(await repairs.has(batch.batchId)).toBe(true);

    proxy.restore();
    // A pass that dies between its commit and the record's removal leaves the record: keep a
    // copy to put back, as such a crash would.
    const copy = join(dataRoot.path, "record-copy.json");
    await cp(join(repairs.dir, `${batch.batchId}.json`), copy);
    expect(await runRepairPass(deps)).toEqual({ committed: 1, alreadyCommitted: 0, failed: 0 });
    expect(await repairs.has(batch.batchId)).toBe(false);
    await rename(copy, join(repairs.dir, `${batch.batchId}.json`));
    expect(await runRepairPass(deps)).toEqual({ committed: 0, alreadyCommitted: 1, failed: 0 });
    expect(await readdir(repairs.dir)).toEqual([]);

    expect(await batchRows()).toEqual([{ n: 1 }]);
    expect(await itemsOf(batch.batchId)).toEqual([{ path: "out.txt", change: "added", size: 33 }]);
    const [repaired] = await executeRows<{ repaired: boolean }>(
      direct,
      sql`select repaired from change_batches where batch_id = ${batch.batchId}`,
    );
    expect(repaired?.repaired).toBe(true);
  });

  test("the scan never follows a symlink out of the Workdir", async () => {
    const outside = join(dataRoot.path, "outside");
    await mkdir(outside);
    await writeFile(join(outside, "secret.txt"), "host file");
    const fence = await seedRunningRun(createDb(database.sql), { uid: UID });
    const { leased } = commands();
    const { symlink } = await import("node:fs/promises");
    const { batch } = await leased.run(
      { fence, workdirPath: WORKDIR, tree: new TreeBatches(fence.runId) },
      { tool: "bash", command: "ln -s" },
      new AbortController().signal,
      () => symlink(outside, join(workdir, "escape")),
    );
    expect(batch.items).toEqual([]);
    expect(await itemsOf(batch.batchId)).toEqual([]);
  });
});
