import { existsSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createCheckpointStore } from "../../../agent-host/checkpoints/checkpoint-store.ts";
import { createCheckpointSyscalls } from "../../../agent-host/checkpoints/checkpoint-syscalls.ts";
import {
  RECONCILE_GRACE_MS,
  reconcileCheckpoints,
} from "../../../agent-host/checkpoints/reconcile-checkpoints.ts";
import { createLibcSyscalls, createPathResolver } from "../../../agent-host/workspace/index.ts";
import type { CheckpointView } from "../../../shared/contracts/checkpoint.ts";
import { checkpoints, projects } from "../../../shared/db/schema.ts";
import type { DataRoot } from "../../support/data-root.ts";
import { testLogger } from "../../support/test-logger.ts";
import { agentRun, plantTree } from "./agent-trees.ts";
import {
  ALICE,
  BOB,
  type CheckpointsHarness,
  startCheckpointsHarness,
  type ThreadJson,
} from "./api-harness.ts";
import { dataRootFor, reportedMode, STORE_MODES } from "./checkpoint-fixture.ts";
import { treeManifest } from "./tree-manifest.ts";

type ErrorJson = { error: { code: string; details?: Record<string, unknown> } };

describe.each(STORE_MODES)("the checkpoint API, %s mode", (mode) => {
  let root: DataRoot;
  let h: CheckpointsHarness;

  beforeAll(async () => {
    root = await dataRootFor(mode);
    h = await startCheckpointsHarness(root);
  });
  afterAll(async () => {
    await h?.close();
    await root?.remove();
  });

  async function workdirOf(thread: ThreadJson, uid = ALICE): Promise<string> {
    const [project] = await h.db.select().from(projects).where(eq(projects.id, thread.project_id));
    return h.ensureWorkdir(project?.workdirPath as string, uid);
  }

  async function take(thread: ThreadJson, uid = ALICE, label?: string): Promise<CheckpointView> {
    const response = await h.call("POST", `/v1/threads/${thread.thread_id}/checkpoints`, {
      uid,
      body: label === undefined ? {} : { label },
    });
    expect(response.status).toBe(201);
    return (await response.json()) as CheckpointView;
  }

  it("undoes a run: create, list, restore; the saved checkpoint holds the state it replaced", async () => {
    const thread = await h.createThread();
    const dir = await workdirOf(thread);
    plantTree(dir);
    const before = treeManifest(dir, true);
    const taken = await take(thread, ALICE, "before the run");
    expect(taken).toMatchObject({ label: "before the run", source: "manual", files: 5 });
    expect(taken.mode).toBe(reportedMode(mode));
    agentRun(dir);
    const changed = treeManifest(dir, true).filter((line) => !/ (link|special) /.test(line));

    const listed = await h.call("GET", `/v1/threads/${thread.thread_id}/checkpoints`);
    expect(
      ((await listed.json()) as { items: CheckpointView[] }).items.map((c) => c.checkpoint_id),
    ).toEqual([taken.checkpoint_id]);
    const restored = await h.call(
      "POST",
      `/v1/threads/${thread.thread_id}/checkpoints/${taken.checkpoint_id}/restore`,
    );
    expect(restored.status).toBe(200);
    const result = (await restored.json()) as { restored: CheckpointView; saved: CheckpointView };
    expect(result.restored.checkpoint_id).toBe(taken.checkpoint_id);
    expect(result.saved).toMatchObject({ source: "restore", skipped: 2 });
    expect(treeManifest(dir, true)).toEqual(before);

    // Undo the undo: the saved checkpoint gives the run's files back.
    const again = await h.call(
      "POST",
      `/v1/threads/${thread.thread_id}/checkpoints/${result.saved.checkpoint_id}/restore`,
    );
    expect(again.status).toBe(200);
    expect(treeManifest(dir, true)).toEqual(changed);
  });

  it("answers 404 to another user on every checkpoint route, and changes nothing", async () => {
    const thread = await h.createThread();
    const dir = await workdirOf(thread);
    plantTree(dir);
    const taken = await take(thread);
    writeFileSync(join(dir, "a.txt"), "alice's later work");
    const aliceTree = treeManifest(dir, true);
    const bobThread = await h.createThread(BOB);
    const attempts: Array<[string, string]> = [
      ["GET", `/v1/threads/${thread.thread_id}/checkpoints`],
      ["POST", `/v1/threads/${thread.thread_id}/checkpoints`],
      ["POST", `/v1/threads/${thread.thread_id}/checkpoints/${taken.checkpoint_id}/restore`],
      ["DELETE", `/v1/threads/${thread.thread_id}/checkpoints/${taken.checkpoint_id}`],
      ["POST", `/v1/threads/${thread.thread_id}/fork`],
      // Alice's checkpoint through Bob's own thread.
      ["POST", `/v1/threads/${bobThread.thread_id}/checkpoints/${taken.checkpoint_id}/restore`],
      ["DELETE", `/v1/threads/${bobThread.thread_id}/checkpoints/${taken.checkpoint_id}`],
    ];
    for (const [method, path] of attempts) {
      const response = await h.call(method, path, {
        uid: BOB,
        ...(method === "POST" ? { body: {} } : {}),
      });
      expect(response.status, `${method} ${path}`).toBe(404);
      expect(((await response.json()) as ErrorJson).error.code).toBe("not_found");
    }
    const forked = await h.call("POST", `/v1/threads/${bobThread.thread_id}/fork`, {
      uid: BOB,
      body: { checkpoint_id: taken.checkpoint_id },
    });
    expect(forked.status).toBe(404);
    expect(treeManifest(dir, true)).toEqual(aliceTree);
    expect(
      await h.db.select().from(checkpoints).where(eq(checkpoints.threadId, thread.thread_id)),
    ).toHaveLength(1);
    // Bob got no store directory and no Workdir (the fork was refused before making one).
    expect(existsSync(join(h.dataRoot, "checkpoints", BOB))).toBe(false);
    expect(existsSync(join(h.dataRoot, "users", BOB))).toBe(false);
  });

  it("a browser's file capability cannot call the node's checkpoint endpoint (403, nothing done)", async () => {
    const thread = await h.createThread();
    const dir = await workdirOf(thread);
    plantTree(dir);
    const taken = await take(thread);
    writeFileSync(join(dir, "a.txt"), "not to be undone by a file token");
    const tree = treeManifest(dir, true);
    const access = await h.call("POST", `/v1/threads/${thread.thread_id}/files/access`, {
      body: { ops: ["read", "write", "delete"] },
    });
    const { base_url, token } = (await access.json()) as { base_url: string; token: string };
    const [project] = await h.db.select().from(projects).where(eq(projects.id, thread.project_id));
    for (const action of ["take", "restore", "fork"] as const) {
      const response = await fetch(`${base_url}/internal/v1/checkpoints`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        body: JSON.stringify({
          workdir_path: project?.workdirPath,
          thread_id: thread.thread_id,
          action,
          checkpoint_id: taken.checkpoint_id,
          fork_workdir_path: "projects/3d9f7a1e-1b2c-4d3e-8f90-123456789abc",
        }),
      });
      expect(response.status, action).toBe(403);
      expect(((await response.json()) as ErrorJson).error.details).toMatchObject({
        reason: "operation_not_granted",
      });
    }
    expect(treeManifest(dir, true)).toEqual(tree);
    expect(
      await h.db.select().from(checkpoints).where(eq(checkpoints.threadId, thread.thread_id)),
    ).toHaveLength(1);
    expect(existsSync(h.workdirOnDisk("projects/3d9f7a1e-1b2c-4d3e-8f90-123456789abc"))).toBe(
      false,
    );
  });

  it("refuses a restore (409) while a run of the thread is pending, and touches nothing", async () => {
    const thread = await h.createThread();
    const dir = await workdirOf(thread);
    plantTree(dir);
    const taken = await take(thread);
    writeFileSync(join(dir, "a.txt"), "work in progress");
    const tree = treeManifest(dir, true);
    const run = await h.call("POST", `/v1/threads/${thread.thread_id}/runs`, {
      body: { input: "go" },
    });
    expect(run.status).toBe(202);
    const refused = await h.call(
      "POST",
      `/v1/threads/${thread.thread_id}/checkpoints/${taken.checkpoint_id}/restore`,
    );
    expect(refused.status).toBe(409);
    expect(((await refused.json()) as ErrorJson).error.details).toMatchObject({
      reason: "run_active",
    });
    expect(treeManifest(dir, true)).toEqual(tree);
    expect(
      await h.db.select().from(checkpoints).where(eq(checkpoints.threadId, thread.thread_id)),
    ).toHaveLength(1);
  });

  it("forks a checkpoint into a new thread with a new managed Workdir", async () => {
    const thread = await h.createThread();
    const dir = await workdirOf(thread);
    plantTree(dir);
    const before = treeManifest(dir);
    const taken = await take(thread);
    agentRun(dir);
    const response = await h.call("POST", `/v1/threads/${thread.thread_id}/fork`, {
      body: { checkpoint_id: taken.checkpoint_id, title: "another try" },
    });
    expect(response.status).toBe(201);
    const fork = (await response.json()) as ThreadJson & { title: string };
    expect(fork.thread_id).not.toBe(thread.thread_id);
    expect(fork.project_id).not.toBe(thread.project_id);
    const [project] = await h.db.select().from(projects).where(eq(projects.id, fork.project_id));
    expect(project?.directoryMode).toBe("managed");
    expect(treeManifest(h.workdirOnDisk(project?.workdirPath as string))).toEqual(before);
  });

  it("deleting the thread deletes its checkpoints; the reconciler removes their directories", async () => {
    const thread = await h.createThread();
    plantTree(await workdirOf(thread));
    const taken = await take(thread);
    const storeDir = join(h.dataRoot, "checkpoints", ALICE);
    expect(readdirSync(storeDir)).toContain(taken.checkpoint_id);
    expect((await h.call("DELETE", `/v1/threads/${thread.thread_id}`)).status).toBe(204);
    expect(
      await h.db.select().from(checkpoints).where(eq(checkpoints.threadId, thread.thread_id)),
    ).toEqual([]);
    const sys = createLibcSyscalls();
    const store = createCheckpointStore({
      dataRoot: h.dataRoot,
      sys,
      resolver: createPathResolver(sys),
      cp: createCheckpointSyscalls(),
      mode: "copy",
      maxEntries: 100_000,
      maxDepth: 64,
      ...(h.subvolumes === undefined ? {} : { subvolumes: h.subvolumes }),
    });
    // Within the grace period nothing is removed (a take renames before it inserts).
    await reconcileCheckpoints({ db: h.db, store, nodeId: "node-test", logger: testLogger() });
    expect(readdirSync(storeDir)).toContain(taken.checkpoint_id);
    const later = () => Date.now() + RECONCILE_GRACE_MS + 1000;
    await reconcileCheckpoints({
      db: h.db,
      store,
      nodeId: "node-test",
      logger: testLogger(),
      now: later,
    });
    expect(readdirSync(storeDir)).not.toContain(taken.checkpoint_id);
  });
});
