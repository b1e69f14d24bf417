import { execFileSync } from "node:child_process";
import { randomUUID } from "node:crypto";
import { linkSync, lstatSync, mkdirSync, renameSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { restoreWorkdir } from "../../../agent-host/checkpoints/restore-workdir.ts";
import { plantTree } from "./agent-trees.ts";
import {
  OTHER_WORKDIR,
  STORE_MODES,
  type StoreEnv,
  setupStore,
  UID,
  WORKDIR,
} from "./checkpoint-fixture.ts";
import { treeManifest } from "./tree-manifest.ts";

const BOB_WORKDIR = "projects/2d9f7a1e-1b2c-4d3e-8f90-123456789abc";

describe.each(STORE_MODES)(
  "what an agent plants before a checkpoint and a restore, %s mode",
  (mode) => {
    let env: StoreEnv | undefined;
    afterEach(async () => {
      await env?.root.remove();
      env = undefined;
    });

    it("touches nothing outside the Workdir and copies nothing from outside it", async () => {
      env = await setupStore(mode);
      const bob = env.path("bob", BOB_WORKDIR);
      const otherThread = env.path(UID, OTHER_WORKDIR);
      for (const dir of [bob, otherThread]) {
        mkdirSync(join(dir, "inner"), { recursive: true });
        writeFileSync(join(dir, "secret.txt"), "not yours\n");
        writeFileSync(join(dir, "inner", "deep.txt"), "not yours either\n");
      }
      const outsideBefore = [treeManifest(bob, true), treeManifest(otherThread, true)];
      plantTree(env.workdir);
      const checkpointId = randomUUID();
      const signal = AbortSignal.timeout(60_000);
      await env.store.take(UID, WORKDIR, checkpointId, signal);
      const before = treeManifest(env.workdir, true);

      // The agent swaps directories for symlinks to another user's and another thread's
      // Workdir, plants a FIFO, a device-like name and a hard link to a file outside.
      renameSync(join(env.workdir, "docs"), join(env.workdir, "docs.moved"));
      symlinkSync(bob, join(env.workdir, "docs"));
      renameSync(join(env.workdir, "bin"), join(env.workdir, "bin.moved"));
      symlinkSync(otherThread, join(env.workdir, "bin"));
      execFileSync("mkfifo", [join(env.workdir, "fifo")]);
      mkdirSync(join(env.workdir, "dev"));
      writeFileSync(join(env.workdir, "dev", "sda"), "");
      const hardLink = () =>
        linkSync(join(otherThread, "secret.txt"), join(env?.workdir ?? "", "hardlink.txt"));
      // A Workdir that is a btrfs subvolume refuses a link to a file outside it at all.
      if (mode === "snapshot") expect(hardLink).toThrow(/EXDEV/);
      else hardLink();

      const savedId = randomUUID();
      const saved = await env.store.take(UID, WORKDIR, savedId, signal);
      expect(saved.skipped).toBe(3); // two symlinks, one FIFO: none followed or opened
      const savedTree = treeManifest(join(env.storeDir, savedId));
      // Nothing below the symlinks was taken; a snapshot keeps them as links, never read.
      expect(savedTree.some((line) => /^(docs|bin)\//.test(line))).toBe(false);
      for (const name of ["docs", "bin"]) {
        const kept = lstatSync(join(env.storeDir, savedId, name), { throwIfNoEntry: false });
        expect(kept === undefined || kept.isSymbolicLink()).toBe(true);
      }
      // The hard link's bytes are the user's own (another of their Workdirs), copied into a
      // new inode: the checkpoint never shares an inode with anything outside.
      if (mode !== "snapshot") {
        expect(lstatSync(join(env.storeDir, savedId, "hardlink.txt")).ino).not.toBe(
          lstatSync(join(otherThread, "secret.txt")).ino,
        );
      }

      await restoreWorkdir(
        env.store,
        { restoreId: randomUUID(), uid: UID, workdirPath: WORKDIR, checkpointId },
        signal,
      );
      expect(treeManifest(env.workdir, true)).toEqual(before);
      expect([treeManifest(bob, true), treeManifest(otherThread, true)]).toEqual(outsideBefore);
      expect(lstatSync(join(otherThread, "secret.txt")).nlink).toBe(1);
    });
  },
);
