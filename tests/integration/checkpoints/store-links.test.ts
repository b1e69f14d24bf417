import { randomUUID } from "node:crypto";
import { chmodSync, lstatSync, statSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { restoreWorkdir } from "../../../agent-host/checkpoints/restore-workdir.ts";
import { plantTree } from "./agent-trees.ts";
import { PER_FILE_MODES, type StoreEnv, setupStore, UID, WORKDIR } from "./checkpoint-fixture.ts";
import { ctimeTicked } from "./ctime-ticked.ts";
import { treeManifest } from "./tree-manifest.ts";

const inode = (path: string) => lstatSync(path).ino;

// Links to the previous checkpoint are the per-file modes' saving; a snapshot shares
// everything already (and its inode numbers are the Workdir's, so these checks do not apply).
describe.each(PER_FILE_MODES)("a checkpoint over the thread's previous one, %s mode", (mode) => {
  let env: StoreEnv | undefined;
  afterEach(async () => {
    await env?.root.remove();
    env = undefined;
  });

  it("links only the files unchanged since it, and both stay exactly their trees", async () => {
    env = await setupStore(mode);
    plantTree(env.workdir);
    await ctimeTicked(env.workdir, join(env.workdir, "docs", "deep", "x.bin"));
    const signal = AbortSignal.timeout(60_000);
    const first = randomUUID();
    await env.store.take(UID, WORKDIR, first, signal);
    const firstManifest = treeManifest(join(env.storeDir, first), true);

    writeFileSync(join(env.workdir, "a.txt"), "changed\n");
    chmodSync(join(env.workdir, "docs", "deep", "x.bin"), 0o600);
    // Same size, mtime put back to the nanosecond: only the ctime tells it changed.
    const notes = join(env.workdir, "docs", "notes.txt");
    const mtimeNs = statSync(notes, { bigint: true }).mtimeNs;
    writeFileSync(notes, "# NOTES\n");
    utimesSync(notes, 1_700_000_000.25 + 3, 1_700_000_000.123456 + 3);
    expect(statSync(notes, { bigint: true }).mtimeNs).toBe(mtimeNs);
    const workdirManifest = treeManifest(env.workdir, true);

    const second = randomUUID();
    const stats = await env.store.take(UID, WORKDIR, second, signal, first);
    expect(stats).toMatchObject({ files: 5, dirs: 3, skipped: 0 });

    const at = (id: string, rel: string) => join(env?.storeDir ?? "", id, rel);
    for (const rel of ["empty.txt", "bin/run.sh"]) {
      expect(inode(at(second, rel))).toBe(inode(at(first, rel)));
    }
    for (const rel of ["a.txt", "docs/deep/x.bin", "docs/notes.txt"]) {
      expect(inode(at(second, rel))).not.toBe(inode(at(first, rel)));
    }
    expect(treeManifest(join(env.storeDir, second), true)).toEqual(workdirManifest);
    expect(treeManifest(join(env.storeDir, first), true)).toEqual(firstManifest);

    // Each restores its own tree.
    for (const [id, manifest] of [
      [first, firstManifest],
      [second, workdirManifest],
    ] as const) {
      await restoreWorkdir(
        env.store,
        { restoreId: randomUUID(), uid: UID, workdirPath: WORKDIR, checkpointId: id },
        signal,
      );
      expect(treeManifest(env.workdir, true)).toEqual(manifest);
    }
    // Removing the first (pruning) leaves the second whole.
    env.store.remove(UID, first);
    expect(treeManifest(join(env.storeDir, second), true)).toEqual(workdirManifest);
  });

  it("a base that is gone is a plain copy", async () => {
    env = await setupStore(mode);
    plantTree(env.workdir);
    const id = randomUUID();
    const stats = await env.store.take(UID, WORKDIR, id, AbortSignal.timeout(60_000), randomUUID());
    expect(stats).toMatchObject({ files: 5, dirs: 3 });
    expect(treeManifest(join(env.storeDir, id), true)).toEqual(treeManifest(env.workdir, true));
  });
});
