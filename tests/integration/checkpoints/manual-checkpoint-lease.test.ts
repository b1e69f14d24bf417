import { mkdirSync, readdirSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { eq, sql } from "drizzle-orm";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { RunFence } from "../../../agent-host/runs/claim/run-fence.ts";
import {
  ExecutionLeases,
  type HeldExecutionLease,
} from "../../../agent-host/runs/execution-lease/execution-leases.ts";
import { LeaseWakeups } from "../../../agent-host/runs/execution-lease/lease-wakeups.ts";
import type { CheckpointView } from "../../../shared/contracts/checkpoint.ts";
import { createDb } from "../../../shared/db/client.ts";
import { executeRows } from "../../../shared/db/execute-rows.ts";
import { agentRuns, checkpoints, projects } from "../../../shared/db/schema.ts";
import { postgresListen } from "../../../shared/listen/postgres-listen.ts";
import { uidDirname } from "../../../shared/paths/uid-dirname.ts";
import { type DataRoot, freshDataRoot } from "../../support/data-root.ts";
import { spawnJsonLineChild } from "../../support/json-line-child.ts";
import { pollUntil } from "../../support/poll-until.ts";
import { testLogger } from "../../support/test-logger.ts";
import { plantTree } from "./agent-trees.ts";
import {
  ALICE,
  BOB,
  type CheckpointsHarness,
  startCheckpointsHarness,
  type ThreadJson,
} from "./api-harness.ts";
import { treeManifest } from "./tree-manifest.ts";

const CHILD = new URL("./lease-holder-child.ts", import.meta.url);
const WAIT_MS = 4_000;
const TTL_MS = 3_000;
type ErrorJson = { error: { code: string; message: string; details?: Record<string, unknown> } };

// A manual checkpoint during a run (decision 0170): it queues for the Workdir's Execution
// Lease behind the run's running command, copies while it holds it, and releases it; a
// command that arrives meanwhile waits. The run's commands here are what LeasedCommands
// does around each command: acquire the run's lease, write, release.
describe("a manual checkpoint during a run takes the Execution Lease between commands", () => {
  let root: DataRoot;
  let h: CheckpointsHarness;
  let leases: ExecutionLeases;
  let client: postgres.Sql;
  let wakeups: LeaseWakeups;
  // While set, a take of that uid stops under the lease until it resolves.
  let gate: { uid: string; reached: boolean; open: Promise<void> } | undefined;

  beforeAll(async () => {
    root = await freshDataRoot();
    h = await startCheckpointsHarness(root, {
      lease: { waitMs: WAIT_MS, ttlMs: TTL_MS, pollIntervalMs: 100 },
      beforeQuotaRead: async (uid) => {
        if (gate?.uid !== uid) return;
        gate.reached = true;
        await gate.open;
      },
    });
    client = postgres(h.databaseUrl, { max: 4, onnotice: () => {} });
    wakeups = new LeaseWakeups({ listen: postgresListen(client), logger: testLogger() });
    await wakeups.start();
    leases = new ExecutionLeases({
      db: createDb(client),
      nodeId: "node-run",
      wakeups,
      pollIntervalMs: 100,
      statementTimeoutMs: 5_000,
      logger: testLogger(),
    });
  });
  afterAll(async () => {
    await wakeups?.stop();
    await client?.end({ timeout: 2 });
    await h?.close();
    await root?.remove();
  });

  async function workdirOf(thread: ThreadJson, uid = ALICE) {
    const [project] = await h.db.select().from(projects).where(eq(projects.id, thread.project_id));
    const workdirPath = project?.workdirPath as string;
    const dir = h.workdirOnDisk(workdirPath, uid);
    mkdirSync(dir, { recursive: true });
    plantTree(dir);
    return { dir, workdirPath };
  }

  /** A run of the thread as a worker's claim leaves it: running, attempt 1, leased. */
  async function runningRun(thread: ThreadJson, uid = ALICE): Promise<RunFence> {
    const response = await h.call("POST", `/v1/threads/${thread.thread_id}/runs`, {
      uid,
      body: { input: "work" },
    });
    expect(response.status).toBe(202);
    const { run_id } = (await response.json()) as { run_id: string };
    await h.db
      .update(agentRuns)
      .set({
        status: "running",
        attempt: 1,
        ownerNode: "node-run",
        leaseExpiresAt: sql`now() + interval '5 minutes'`,
        startedAt: sql`now()`,
      })
      .where(eq(agentRuns.runId, run_id));
    return { runId: run_id, uid, attempt: 1 };
  }

  async function command(fence: RunFence, workdirPath: string): Promise<HeldExecutionLease> {
    const acquired = await leases.acquire(fence, workdirPath, AbortSignal.timeout(60_000));
    if (!acquired.ok) throw new Error(`command not granted: ${acquired.reason}`);
    return acquired.lease;
  }

  const leaseRows = (uid: string) =>
    executeRows<{ state: string; run_id: string | null }>(
      h.db,
      sql`select state, run_id from execution_leases where uid = ${uid} order by seq`,
    );

  function takeCheckpoint(thread: ThreadJson, uid = ALICE) {
    return h.call("POST", `/v1/threads/${thread.thread_id}/checkpoints`, { uid, body: {} });
  }

  const checkpointTree = (uid: string, id: string) =>
    treeManifest(join(h.dataRoot, "checkpoints", uidDirname(uid), id), true);

  it("waits for the running command and holds the tree as that command left it", async () => {
    const thread = await h.createThread();
    const { dir, workdirPath } = await workdirOf(thread);
    const fence = await runningRun(thread);
    const running = await command(fence, workdirPath);
    writeFileSync(join(dir, "first-half.txt"), "written before the checkpoint was asked");

    let answered = false;
    const taking = takeCheckpoint(thread).then((response) => {
      answered = true;
      return response;
    });
    await pollUntil(
      async () => (await leaseRows(ALICE)).some((r) => r.run_id === null && r.state === "waiting"),
      { timeoutMs: 30_000, intervalMs: 20 },
    );
    // The command is not done: the checkpoint must not see only half of its writes.
    writeFileSync(join(dir, "second-half.txt"), "written after the checkpoint was asked");
    renameSync(join(dir, "a.txt"), join(dir, "renamed.txt"));
    const afterCommand = treeManifest(dir, true);
    expect(answered).toBe(false);
    await leases.release(running);

    const response = await taking;
    expect(response.status).toBe(201);
    const taken = (await response.json()) as CheckpointView;
    expect(taken.source).toBe("manual");
    expect(checkpointTree(ALICE, taken.checkpoint_id)).toEqual(afterCommand);
    expect(await leaseRows(ALICE)).toEqual([]);
  });

  it("a command issued while the checkpoint holds the lease waits, then runs", async () => {
    const thread = await h.createThread();
    const { dir, workdirPath } = await workdirOf(thread);
    const before = treeManifest(dir, true);
    const fence = await runningRun(thread);
    let open = () => {};
    gate = { uid: ALICE, reached: false, open: new Promise<void>((r) => (open = r)) };
    const taking = takeCheckpoint(thread);
    await pollUntil(() => gate?.reached === true, { timeoutMs: 30_000, intervalMs: 20 });

    let wrote = false;
    const next = command(fence, workdirPath).then(async (lease) => {
      writeFileSync(join(dir, "next-command.txt"), "after the checkpoint");
      wrote = true;
      await leases.release(lease);
      return lease;
    });
    await pollUntil(
      async () => (await leaseRows(ALICE)).some((r) => r.run_id !== null && r.state === "waiting"),
      { timeoutMs: 30_000, intervalMs: 20 },
    );
    expect(wrote).toBe(false);
    gate = undefined;
    open();

    const response = await taking;
    expect(response.status).toBe(201);
    expect((await next).waited).toBe(true);
    expect(wrote).toBe(true);
    const taken = (await response.json()) as CheckpointView;
    expect(checkpointTree(ALICE, taken.checkpoint_id)).toEqual(before);
    expect(await leaseRows(ALICE)).toEqual([]);
  });

  it("gives up after the wait bound with workdir_busy: nothing taken, nothing queued", async () => {
    const thread = await h.createThread();
    const { workdirPath } = await workdirOf(thread);
    const fence = await runningRun(thread);
    const running = await command(fence, workdirPath);
    const storeDir = join(h.dataRoot, "checkpoints", uidDirname(ALICE));
    const storeBefore = readdirSync(storeDir).sort();

    const response = await takeCheckpoint(thread);
    expect(response.status).toBe(409);
    const body = (await response.json()) as ErrorJson;
    expect(body.error.details).toMatchObject({ reason: "workdir_busy" });
    expect(body.error.message).toMatch(/No checkpoint was taken/);
    expect(
      await h.db.select().from(checkpoints).where(eq(checkpoints.threadId, thread.thread_id)),
    ).toEqual([]);
    expect(readdirSync(storeDir).sort()).toEqual(storeBefore);
    // Only the command's own row is left: the checkpoint's withdrew.
    expect(await leaseRows(ALICE)).toEqual([{ state: "held", run_id: fence.runId }]);
    await leases.release(running);
  });

  it("releases the lease when the take is refused for quota or fails to copy", async () => {
    const thread = await h.createThread();
    const { workdirPath } = await workdirOf(thread);
    const fence = await runningRun(thread);
    await h.db.execute(
      sql`insert into user_limits (uid, workspace_bytes) values (${ALICE}, 1)
          on conflict (uid) do update set workspace_bytes = 1`,
    );
    const refused = await takeCheckpoint(thread);
    await h.db.execute(sql`delete from user_limits where uid = ${ALICE}`);
    expect(refused.status).toBe(507);
    expect(((await refused.json()) as ErrorJson).error.code).toBe("quota_exceeded");
    expect(await leaseRows(ALICE)).toEqual([]);
    const afterQuota = await command(fence, workdirPath);
    expect(afterQuota.waited).toBe(false);
    await leases.release(afterQuota);

    // A copy that fails: the uid's store directory is a file, so the take cannot write.
    const carol = "carol";
    const carolThread = await h.createThread(carol);
    const carolWorkdir = await workdirOf(carolThread, carol);
    const carolRun = await runningRun(carolThread, carol);
    mkdirSync(join(h.dataRoot, "checkpoints"), { recursive: true });
    writeFileSync(join(h.dataRoot, "checkpoints", uidDirname(carol)), "not a directory");
    const failed = await takeCheckpoint(carolThread, carol);
    expect(failed.status).not.toBe(201);
    expect(((await failed.json()) as ErrorJson).error.details).toMatchObject({
      op: "checkpoint store",
    });
    expect(await leaseRows(carol)).toEqual([]);
    expect(
      await h.db.select().from(checkpoints).where(eq(checkpoints.threadId, carolThread.thread_id)),
    ).toEqual([]);
    const afterCopy = await command(carolRun, carolWorkdir.workdirPath);
    expect(afterCopy.waited).toBe(false);
    await leases.release(afterCopy);
  });

  it("a holder whose lease lapsed while it copied records nothing (lease_lost)", async () => {
    const thread = await h.createThread();
    await workdirOf(thread);
    const storeDir = join(h.dataRoot, "checkpoints", uidDirname(ALICE));
    const storeBefore = readdirSync(storeDir).sort();
    let open = () => {};
    gate = { uid: ALICE, reached: false, open: new Promise<void>((r) => (open = r)) };
    const taking = takeCheckpoint(thread);
    await pollUntil(() => gate?.reached === true, { timeoutMs: 30_000, intervalMs: 20 });
    // What the grant's clean-up does to a row past its expiry (a node paused past the TTL):
    // from then on a command may be granted, so the copy must not become a checkpoint.
    await h.db.execute(sql`delete from execution_leases where uid = ${ALICE} and run_id is null`);
    gate = undefined;
    open();

    const response = await taking;
    expect(response.status).toBe(409);
    expect(((await response.json()) as ErrorJson).error.details).toMatchObject({
      reason: "lease_lost",
    });
    expect(
      await h.db.select().from(checkpoints).where(eq(checkpoints.threadId, thread.thread_id)),
    ).toEqual([]);
    expect(readdirSync(storeDir).sort()).toEqual(storeBefore);
  });

  it("a holder killed with -9 mid-checkpoint frees the Workdir at its expiry; the thread is usable", async () => {
    const thread = await h.createThread();
    const { dir, workdirPath } = await workdirOf(thread);
    const fence = await runningRun(thread);
    const child = spawnJsonLineChild(
      CHILD,
      {
        databaseUrl: h.databaseUrl,
        dataRoot: h.dataRoot,
        uid: ALICE,
        threadId: thread.thread_id,
        workdirPath,
        ttlMs: TTL_MS,
      },
      "lease holder child",
    );
    await child.next("holding");
    expect(await leaseRows(ALICE)).toEqual([{ state: "held", run_id: null }]);
    await child.kill9();

    // The run's next command waits for the dead holder's row, then runs once it lapses.
    const lease = await command(fence, workdirPath);
    expect(lease.waited).toBe(true);
    writeFileSync(join(dir, "after-the-kill.txt"), "the run goes on");
    await leases.release(lease);
    const response = await takeCheckpoint(thread);
    expect(response.status).toBe(201);
    const taken = (await response.json()) as CheckpointView;
    expect(checkpointTree(ALICE, taken.checkpoint_id)).toEqual(treeManifest(dir, true));
    // The killed take left no row (its directory, if any, is the reconciler's).
    expect(
      await h.db.select().from(checkpoints).where(eq(checkpoints.threadId, thread.thread_id)),
    ).toHaveLength(1);
  });

  it("another user's commands and checkpoints do not wait for it", async () => {
    const thread = await h.createThread();
    await workdirOf(thread);
    let open = () => {};
    gate = { uid: ALICE, reached: false, open: new Promise<void>((r) => (open = r)) };
    const taking = takeCheckpoint(thread);
    await pollUntil(() => gate?.reached === true, { timeoutMs: 30_000, intervalMs: 20 });

    const bobThread = await h.createThread(BOB);
    const bob = await workdirOf(bobThread, BOB);
    const bobRun = await runningRun(bobThread, BOB);
    const bobLease = await command(bobRun, bob.workdirPath);
    expect(bobLease.waited).toBe(false);
    await leases.release(bobLease);
    const bobTaken = await takeCheckpoint(bobThread, BOB);
    expect(bobTaken.status).toBe(201);
    expect(await leaseRows(BOB)).toEqual([]);

    gate = undefined;
    open();
    expect((await taking).status).toBe(201);
    expect(await leaseRows(ALICE)).toEqual([]);
  });
});
