import { randomUUID } from "node:crypto";
import { existsSync, lstatSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { restoreWorkdir } from "../../../agent-host/checkpoints/restore-workdir.ts";
import { agentRun, plantTree } from "./agent-trees.ts";
import {
  reportedMode,
  STORE_MODES,
  type StoreEnv,
  setupStore,
  UID,
  WORKDIR,
} from "./checkpoint-fixture.ts";
import { treeManifest } from "./tree-manifest.ts";

/** Manifest lines of what a checkpoint keeps: no symlinks, no special files. */
function keptOnly(lines: string[]): string[] {
  return lines.filter((line) => !/ (link|special) /.test(line));
}

describe.each(STORE_MODES)("checkpoint store, %s mode", (mode) => {
  let env: StoreEnv | undefined;
  afterEach(async () => {
    await env?.root.remove();
    env = undefined;
  });

  it("reports the mode its filesystem allows", async () => {
    env = await setupStore(mode);
    expect(env.store.mode).toBe(reportedMode(mode));
  });

  it("undoes a run exactly, and the saved checkpoint is the tree just before the restore", async () => {
    env = await setupStore(mode);
    plantTree(env.workdir);
    const before = treeManifest(env.workdir, true);
    const signal = AbortSignal.timeout(60_000);
    const taken = await env.store.take(UID, WORKDIR, randomUUID(), signal);
    expect(taken).toMatchObject({ files: 5, dirs: 3, bytes: 300_000 + 6 + 19 + 8, skipped: 0 });
    const checkpointId = readdirSync(env.storeDir)[0] as string;

    agentRun(env.workdir);
    const preRestore = treeManifest(env.workdir, true);
    expect(preRestore).not.toEqual(before);
    const savedId = randomUUID();
    const saved = await env.store.take(UID, WORKDIR, savedId, signal);
    expect(saved.skipped).toBe(2); // the symlink and the FIFO
    const restoreId = randomUUID();
    const inode = lstatSync(env.workdir).ino;
    await restoreWorkdir(
      env.store,
      { restoreId, uid: UID, workdirPath: WORKDIR, checkpointId },
      signal,
    );

    expect(treeManifest(env.workdir, true)).toEqual(before);
    // The same directory, refilled: a sandbox that binds the Workdir keeps seeing it.
    expect(lstatSync(env.workdir).ino).toBe(inode);
    // A snapshot holds the symlink and the FIFO as names (never followed or opened).
    expect(keptOnly(treeManifest(join(env.storeDir, savedId), true))).toEqual(keptOnly(preRestore));
    // Nothing of the restore is left: no staging directory, no journal.
    expect(readdirSync(join(env.workdir, ".."))).toEqual([WORKDIR.split("/")[1]]);
    expect(readdirSync(env.storeDir).sort()).toEqual([checkpointId, savedId].sort());
    // And the saved one restores the run's tree (without what checkpoints never keep).
    await restoreWorkdir(
      env.store,
      { restoreId: randomUUID(), uid: UID, workdirPath: WORKDIR, checkpointId: savedId },
      signal,
    );
    expect(treeManifest(env.workdir, true)).toEqual(keptOnly(preRestore));
    expect(existsSync(join(env.workdir, "etc-link"))).toBe(false);
  });
});
