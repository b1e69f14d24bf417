import { randomUUID } from "node:crypto";
import {
  closeSync,
  constants,
  lstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  renameSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import {
  recoverRestores,
  STAGING_PREFIX,
} from "../../../agent-host/checkpoints/restore-workdir.ts";
import { agentRun, plantTree } from "./agent-trees.ts";
import { PER_FILE_MODES, type StoreEnv, setupStore, UID, WORKDIR } from "./checkpoint-fixture.ts";
import { treeManifest } from "./tree-manifest.ts";

// A restore killed mid-clear by the first build (whole checkpoint staged, a journal with no
// `diff`), recovered by this one after an upgrade: it still ends at the restored tree.
// The first build never made a Workdir a subvolume, so its journals exist only beside
// plain Workdirs.
describe.each(PER_FILE_MODES)("a first-build restore journal, %s mode", (mode) => {
  let env: StoreEnv | undefined;
  afterEach(async () => {
    await env?.root.remove();
    env = undefined;
  });

  it("is rolled forward with whole-tree moves", async () => {
    env = await setupStore(mode);
    plantTree(env.workdir);
    const checkpointId = randomUUID();
    await env.store.take(UID, WORKDIR, checkpointId, AbortSignal.timeout(60_000));
    const restored = treeManifest(env.workdir, true);
    agentRun(env.workdir);

    // The first build's state at `clearing`: the whole checkpoint staged, the trash holding
    // part of the old Workdir, the journal with the checkpoint root's metadata.
    const restoreId = randomUUID();
    const parent = join(env.workdir, "..");
    const staging = join(parent, STAGING_PREFIX + restoreId);
    mkdirSync(staging, { mode: 0o700 });
    mkdirSync(`${staging}-old`, { mode: 0o700 });
    const stagingFd = openSync(staging, constants.O_RDONLY | constants.O_DIRECTORY);
    try {
      await env.store.copyOut(UID, checkpointId, stagingFd, true, AbortSignal.timeout(60_000));
    } finally {
      closeSync(stagingFd);
    }
    for (const name of ["a.txt", "docs", "pipe"]) {
      renameSync(join(env.workdir, name), join(`${staging}-old`, name));
    }
    const root = lstatSync(join(env.storeDir, checkpointId), { bigint: true });
    writeFileSync(
      join(env.storeDir, `restore-${restoreId}.json`),
      JSON.stringify({
        restore_id: restoreId,
        uid: UID,
        workdir_path: WORKDIR,
        checkpoint_id: checkpointId,
        phase: "clearing",
        root: {
          mode: String(root.mode),
          atime_ns: String(root.atimeNs),
          mtime_ns: String(root.mtimeNs),
        },
      }),
    );

    expect(recoverRestores(env.store).get(restoreId)).toBe("completed");
    expect(treeManifest(env.workdir, true)).toEqual(restored);
    expect(readdirSync(parent)).toEqual([WORKDIR.split("/")[1]]);
    expect(readdirSync(env.storeDir)).toEqual([checkpointId]);
  });
});
