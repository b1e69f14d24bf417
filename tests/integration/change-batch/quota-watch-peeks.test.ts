import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
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
import {
  openWorkdirScanner,
  type WorkdirScanner,
} from "../../../agent-host/workspace/open-workdir-scanner.ts";
import { putLimitsOverride } from "../../../functions/limits/user-limits-store.ts";
import { createDb, type Db } from "../../../shared/db/client.ts";
import { uidDirname } from "../../../shared/paths/uid-dirname.ts";
import { type DataRoot, freshDataRoot } from "../../support/data-root.ts";
import { freshDatabase, type TestDatabase } from "../../support/postgres.ts";
import { seedRunningRun } from "../execution-lease/seed-runs.ts";

// The quota watch's looks through incremental peeks (decision 0163) count every watched
// command of a uid: two commands in two Workdirs, each within the quota alone, are both
// stopped once together they pass it; another uid's command beside them is not. Real
// Postgres, real ext4 and fanotify, the scanner and gate the run worker wires.

const logger = pino({ level: "silent" });
const MiB = 1024 * 1024;

let database: TestDatabase;
let dataRoot: DataRoot;
let db: Db;
let scanner: WorkdirScanner;

beforeEach(async () => {
  database = await freshDatabase();
  dataRoot = await freshDataRoot();
  db = createDb(database.sql);
  scanner = openWorkdirScanner(dataRoot.path, logger);
});
afterEach(async () => {
  scanner.close();
  await database.drop();
  await dataRoot.remove();
});

const onHost = (uid: string, ...path: string[]) =>
  join(dataRoot.path, "users", uidDirname(uid), "workspace", ...path);

/** Writes `bytes` into the Workdir, then runs until stopped (at most `boundMs`). */
function writer(uid: string, workdir: string, bytes: number, boundMs: number) {
  return async (signal: AbortSignal) => {
    await writeFile(onHost(uid, workdir, "out.bin"), Buffer.alloc(bytes));
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, boundMs);
      signal.addEventListener("abort", () => {
        clearTimeout(timer);
        resolve();
      });
    });
    return signal.aborted ? "stopped" : "ran to its end";
  };
}

test("two commands of one uid in two Workdirs are both stopped once together they pass its quota; another uid's is not", async () => {
  const sys = createLibcSyscalls();
  const accounting = createAccountingQuota({ dataRoot: dataRoot.path });
  const leased = new LeasedCommands({
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
    scanner: scanner.scanner,
    peeker: scanner.peeker,
  });
  for (const [uid, dir] of [
    ["eve", "one"],
    ["eve", "two"],
    ["fay", "one"],
  ] as const) {
    await mkdir(onHost(uid, dir), { recursive: true });
  }
  await putLimitsOverride(db, "eve", { workspace_bytes: 10 * MiB });
  await putLimitsOverride(db, "fay", { workspace_bytes: 10 * MiB });
  const command = async (uid: string, workdirPath: string) => {
    const fence = await seedRunningRun(db, { uid });
    const scope = { fence, workdirPath, tree: new TreeBatches(fence.runId) };
    return leased
      .run(
        scope,
        { tool: "bash", command: "write" },
        AbortSignal.timeout(60_000),
        writer(uid, workdirPath, 6 * MiB, 10_000),
      )
      .then(
        ({ value, batch }) => ({ value, items: batch.items.length }),
        (error: unknown) => error,
      );
  };
  const [one, two, other] = await Promise.all([
    command("eve", "one"),
    command("eve", "two"),
    // 6 MiB of fay's 10 MiB: within its quota; it runs to its own end.
    command("fay", "one"),
  ]);
  // The looks were peeks: the scanner holds a mark on this data root.
  expect(scanner.peeker()).toBeDefined();
  for (const stopped of [one, two]) {
    expect(stopped).toMatchObject({
      code: "quota_exceeded",
      details: { reason: "workspace_quota", stopped: true },
    });
  }
  expect(other).toEqual({ value: "ran to its end", items: 1 });
});
