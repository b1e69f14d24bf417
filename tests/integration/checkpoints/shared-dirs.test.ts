import { randomUUID } from "node:crypto";
import { readdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { eq } from "drizzle-orm";
import { afterEach, describe, expect, it } from "vitest";
import { Checkpoints } from "../../../agent-host/checkpoints/checkpoints.ts";
import { reconcileCheckpoints } from "../../../agent-host/checkpoints/reconcile-checkpoints.ts";
import { createDb, type Db } from "../../../shared/db/client.ts";
import { checkpoints, conversations, projects, userLimits } from "../../../shared/db/schema.ts";
import { freshDatabase, type TestDatabase } from "../../support/postgres.ts";
import { testLogger } from "../../support/test-logger.ts";
import { plantTree } from "./agent-trees.ts";
import { STORE_MODES, type StoreEnv, setupStore, UID, WORKDIR } from "./checkpoint-fixture.ts";
import { ctimeTicked } from "./ctime-ticked.ts";
import { treeManifest } from "./tree-manifest.ts";

// Decision 0171: a checkpoint of a Workdir that has not changed since the thread's previous
// checkpoint names that checkpoint's directory instead of making a new one; a directory
// lives while any row names it.
describe.each(STORE_MODES)("a checkpoint of an unchanged Workdir, %s mode", (mode) => {
  let database: TestDatabase | undefined;
  let env: StoreEnv | undefined;
  afterEach(async () => {
    await env?.root.remove();
    await database?.drop();
    env = undefined;
    database = undefined;
  });

  async function setup() {
    database = await freshDatabase();
    const db: Db = createDb(database.sql);
    env = await setupStore(mode);
    plantTree(env.workdir);
    await ctimeTicked(env.workdir, join(env.workdir, "docs", "deep", "x.bin"));
    const [project] = await db
      .insert(projects)
      .values({ uid: UID, name: "p", workdirPath: WORKDIR, directoryMode: "managed" })
      .returning({ id: projects.id });
    const threadId = randomUUID();
    await db
      .insert(conversations)
      .values({ threadId, uid: UID, projectId: project?.id as string, rootThreadId: threadId });
    const service = new Checkpoints({
      db,
      store: env.store,
      nodeId: "node-a",
      workspaceBytes: async () => 0,
      defaultWorkspaceBytes: 1024 ** 3,
      logger: testLogger(),
    });
    const target = { uid: UID, threadId, workdirPath: WORKDIR };
    const take = () => service.take(target, { source: "manual" }, AbortSignal.timeout(60_000));
    return { db, env, service, target, take };
  }

  it("names the previous directory; a change, a new symlink or a removed file makes a new one", async () => {
    const { env, service, target, take } = await setup();
    const tree = treeManifest(env.workdir, true);
    const first = await take();
    const second = await take();
    expect(second.storeId).toBe(first.checkpointId);
    expect(second).toMatchObject({ files: first.files, bytes: first.bytes, dirs: first.dirs });
    expect(readdirSync(env.storeDir)).toEqual([first.checkpointId]);

    // Undo to the second (an alias) after a change: the tree comes back exactly.
    writeFileSync(join(env.workdir, "a.txt"), "changed\n");
    const third = await take();
    expect(third.storeId).toBeNull();
    await service.restore(target, second.checkpointId, AbortSignal.timeout(60_000));
    expect(treeManifest(env.workdir, true)).toEqual(tree);

    // Each of these leaves every file as it was but is a different Workdir.
    for (const change of [
      () => symlinkSync("/etc/passwd", join(env.workdir, "planted")),
      () => rmSync(join(env.workdir, "docs", "notes.txt")),
    ]) {
      await ctimeTicked(env.workdir, join(env.workdir, "docs", "deep", "x.bin"));
      const before = await take();
      change();
      const after = await take();
      expect(after.storeId).toBeNull();
      expect(after.checkpointId).not.toBe(before.checkpointId);
    }
  });

  it("counts a shared directory once against the quota", async () => {
    const { db, env, take } = await setup();
    const first = await take();
    // Room for two and a half copies: a third row naming the same directory does not use
    // any of it, so a changed Workdir still fits beside the first copy.
    await db.insert(userLimits).values({ uid: UID, workspaceBytes: Math.floor(first.bytes * 2.5) });
    expect((await take()).storeId).toBe(first.checkpointId);
    expect((await take()).storeId).toBe(first.checkpointId);
    writeFileSync(join(env.workdir, "a.txt"), "changed\n");
    const changed = await take();
    expect(changed.storeId).toBeNull();
    expect(readdirSync(env.storeDir).sort()).toEqual(
      [first.checkpointId, changed.checkpointId].sort(),
    );
  });

  it("keeps a directory while a later checkpoint names it: pruning and the reconciler", async () => {
    const { db, env, take } = await setup();
    await db.insert(userLimits).values({ uid: UID, maxCheckpointsPerThread: 1 });
    const tree = treeManifest(env.workdir, true);
    const first = await take();
    const second = await take();
    expect(second.storeId).toBe(first.checkpointId);
    // The first row was pruned, its directory stays: the second names it.
    expect((await db.select().from(checkpoints)).map((row) => row.checkpointId)).toEqual([
      second.checkpointId,
    ]);
    expect(readdirSync(env.storeDir)).toEqual([first.checkpointId]);
    const later = () => Date.now() + 24 * 3600_000;
    await reconcileCheckpoints({
      db,
      store: env.store,
      nodeId: "node-a",
      logger: testLogger(),
      now: later,
    });
    expect(readdirSync(env.storeDir)).toEqual([first.checkpointId]);
    expect(treeManifest(join(env.storeDir, first.checkpointId), true)).toEqual(tree);
    expect(await db.select().from(checkpoints)).toHaveLength(1);

    // A changed Workdir: a new directory, and the old one goes with its last row.
    writeFileSync(join(env.workdir, "a.txt"), "changed\n");
    const third = await take();
    expect(third.storeId).toBeNull();
    expect(readdirSync(env.storeDir)).toEqual([third.checkpointId]);
    expect(
      await db.select().from(checkpoints).where(eq(checkpoints.checkpointId, second.checkpointId)),
    ).toEqual([]);
  });
});
