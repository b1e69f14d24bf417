import { randomUUID } from "node:crypto";
import { readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { Checkpoints } from "../../../agent-host/checkpoints/checkpoints.ts";
import { putLimitsOverride } from "../../../functions/limits/user-limits-store.ts";
import { createDb, type Db } from "../../../shared/db/client.ts";
import { checkpoints, conversations, projects, userLimits } from "../../../shared/db/schema.ts";
import { WorkcellError } from "../../../shared/errors/index.ts";
import { freshDatabase, type TestDatabase } from "../../support/postgres.ts";
import { testLogger } from "../../support/test-logger.ts";
import { plantTree } from "./agent-trees.ts";
import { type StoreEnv, setupStore, UID, WORKDIR } from "./checkpoint-fixture.ts";
import { treeManifest } from "./tree-manifest.ts";

const TREE_BYTES = 300_000 + 6 + 19 + 8;

describe("checkpoints with their rows", () => {
  let database: TestDatabase;
  let db: Db;
  let env: StoreEnv;
  let threadId: string;
  let workspaceBytes = 0;
  let service: Checkpoints;

  beforeEach(async () => {
    database = await freshDatabase();
    db = createDb(database.sql);
    env = await setupStore("copy");
    plantTree(env.workdir);
    const [project] = await db
      .insert(projects)
      .values({ uid: UID, name: "p", workdirPath: WORKDIR, directoryMode: "managed" })
      .returning({ id: projects.id });
    threadId = randomUUID();
    await db
      .insert(conversations)
      .values({ threadId, uid: UID, projectId: project?.id as string, rootThreadId: threadId });
    workspaceBytes = TREE_BYTES;
    service = new Checkpoints({
      db,
      store: env.store,
      nodeId: "node-a",
      workspaceBytes: async () => workspaceBytes,
      defaultWorkspaceBytes: 10 * TREE_BYTES,
      logger: testLogger(),
    });
  });

  afterEach(async () => {
    await env.root.remove();
    await database.drop();
  });

  const target = () => ({ uid: UID, threadId, workdirPath: WORKDIR });

  it("refuses a checkpoint that would pass the quota, and writes nothing", async () => {
    await db.insert(userLimits).values({ uid: UID, workspaceBytes: 2 * TREE_BYTES });
    const first = await service.take(
      target(),
      { source: "manual", label: "one" },
      AbortSignal.timeout(30_000),
    );
    expect(first).toMatchObject({
      files: 5,
      bytes: TREE_BYTES,
      source: "manual",
      label: "one",
      mode: "copy",
    });
    // Changed, so it needs a copy of its own (an unchanged Workdir would name the first
    // checkpoint's directory and add nothing: decision 0171).
    writeFileSync(join(env.workdir, "a.txt"), "changed after the first checkpoint\n");
    const refused = await service
      .take(target(), { source: "manual" }, AbortSignal.timeout(30_000))
      .catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(WorkcellError);
    expect((refused as WorkcellError).code).toBe("quota_exceeded");
    expect(await db.select().from(checkpoints)).toHaveLength(1);
    expect(readdirSync(env.storeDir)).toEqual([first.checkpointId]);
  });

  it("keeps exactly max_checkpoints_per_thread, dropping the oldest rows and directories", async () => {
    // Set the way PUT /v1/admin/users/{uid}/limits sets it.
    await putLimitsOverride(db, UID, { max_checkpoints_per_thread: 3 });
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      writeFileSync(join(env.workdir, "counter.txt"), String(i));
      ids.push(
        (await service.take(target(), { source: "manual" }, AbortSignal.timeout(30_000)))
          .checkpointId,
      );
    }
    const kept = (await service.list(target())).map((row) => row.checkpointId);
    expect(kept).toEqual(ids.slice(2).reverse());
    expect(readdirSync(env.storeDir).sort()).toEqual(ids.slice(2).sort());
  });

  it("restores through the service and returns the saved state, which survives pruning", async () => {
    await db.insert(userLimits).values({ uid: UID, maxCheckpointsPerThread: 2 });
    const before = treeManifest(env.workdir, true);
    const taken = await service.take(
      target(),
      { source: "run", runId: randomUUID() },
      AbortSignal.timeout(30_000),
    );
    writeFileSync(join(env.workdir, "a.txt"), "the run changed this");
    const changed = treeManifest(env.workdir, true);
    const { restored, saved } = await service.restore(
      target(),
      taken.checkpointId,
      AbortSignal.timeout(30_000),
    );
    expect(restored.checkpointId).toBe(taken.checkpointId);
    expect(saved.source).toBe("restore");
    expect(treeManifest(env.workdir, true)).toEqual(before);
    expect(treeManifest(join(env.storeDir, saved.checkpointId), true)).toEqual(changed);
  });

  it("does not find another user's or another thread's checkpoint", async () => {
    const taken = await service.take(target(), { source: "manual" }, AbortSignal.timeout(30_000));
    expect(await service.find({ uid: "bob", threadId }, taken.checkpointId)).toBeUndefined();
    expect(
      await service.find({ uid: UID, threadId: randomUUID() }, taken.checkpointId),
    ).toBeUndefined();
    const refused = await service
      .restore(
        { uid: "bob", threadId, workdirPath: WORKDIR },
        taken.checkpointId,
        AbortSignal.timeout(30_000),
      )
      .catch((e: unknown) => e);
    expect((refused as WorkcellError).code).toBe("not_found");
  });
});
