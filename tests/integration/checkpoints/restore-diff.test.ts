import { randomUUID } from "node:crypto";
import { lstatSync, readFileSync, statSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { restoreWorkdir } from "../../../agent-host/checkpoints/restore-workdir.ts";
import { plantTree } from "./agent-trees.ts";
import { STORE_MODES, type StoreEnv, setupStore, UID, WORKDIR } from "./checkpoint-fixture.ts";
import { treeManifest } from "./tree-manifest.ts";

const UNCHANGED = ["empty.txt", "bin/run.sh", "docs/notes.txt", "docs/deep/x.bin", "docs/deep"];

/** Inode and ctime of each path: a restore that touched the entry changes one of them. */
function identities(dir: string, paths: string[]): string[] {
  return paths.map((rel) => {
    const st = lstatSync(join(dir, rel), { bigint: true });
    return `${rel} ${st.ino} ${st.ctimeNs}`;
  });
}

async function restore(env: StoreEnv, checkpointId: string): Promise<void> {
  await restoreWorkdir(
    env.store,
    { restoreId: randomUUID(), uid: UID, workdirPath: WORKDIR, checkpointId },
    AbortSignal.timeout(60_000),
  );
}

describe.each(STORE_MODES)("a restore touches only what differs, %s mode", (mode) => {
  let env: StoreEnv | undefined;
  afterEach(async () => {
    await env?.root.remove();
    env = undefined;
  });

  async function planted(): Promise<{ env: StoreEnv; checkpointId: string; before: string[] }> {
    env = await setupStore(mode);
    plantTree(env.workdir);
    const before = treeManifest(env.workdir, true);
    const checkpointId = randomUUID();
    await env.store.take(UID, WORKDIR, checkpointId, AbortSignal.timeout(60_000));
    return { env, checkpointId, before };
  }

  it("leaves unchanged files and directories as they are (same inode, same ctime)", async () => {
    const { env, checkpointId, before } = await planted();
    writeFileSync(join(env.workdir, "a.txt"), "changed\n");
    const untouched = identities(env.workdir, UNCHANGED);
    const changedInode = lstatSync(join(env.workdir, "a.txt")).ino;

    await restore(env, checkpointId);

    expect(treeManifest(env.workdir, true)).toEqual(before);
    expect(identities(env.workdir, UNCHANGED)).toEqual(untouched);
    expect(lstatSync(join(env.workdir, "a.txt")).ino).not.toBe(changedInode);
  });

  it("finds a rewrite that kept the size and put the mtime back (by content)", async () => {
    const { env, checkpointId, before } = await planted();
    const path = join(env.workdir, "docs", "notes.txt");
    const mtimeNs = statSync(path, { bigint: true }).mtimeNs;
    writeFileSync(path, "# NOTES\n"); // same length
    // The very times plantTree gave it (index 3), so the metadata matches to the nanosecond.
    utimesSync(path, 1_700_000_000.25 + 3, 1_700_000_000.123456 + 3);
    expect(statSync(path, { bigint: true }).mtimeNs).toBe(mtimeNs);

    await restore(env, checkpointId);

    expect(readFileSync(path, "utf8")).toBe("# notes\n");
    expect(treeManifest(env.workdir, true)).toEqual(before);
  });

  it("a second restore of the same checkpoint with nothing changed moves nothing", async () => {
    const { env, checkpointId, before } = await planted();
    writeFileSync(join(env.workdir, "a.txt"), "changed\n");
    await restore(env, checkpointId);
    // a.txt now comes from the first restore (newer ctime than the checkpoint's copy): it
    // is compared by content and found equal.
    const all = [...UNCHANGED, "a.txt"];
    const after = identities(env.workdir, all);

    await restore(env, checkpointId);

    expect(treeManifest(env.workdir, true)).toEqual(before);
    expect(identities(env.workdir, all)).toEqual(after);
  });
});
