import { lstatSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { beforeRunCheckpoint } from "../../../agent-host/checkpoints/before-run-checkpoint.ts";
import { createCheckpointStore } from "../../../agent-host/checkpoints/checkpoint-store.ts";
import { createCheckpointSyscalls } from "../../../agent-host/checkpoints/checkpoint-syscalls.ts";
import { Checkpoints } from "../../../agent-host/checkpoints/checkpoints.ts";
import { detectSubvolumes } from "../../../agent-host/checkpoints/subvolumes.ts";
import { createLibcSyscalls, createPathResolver } from "../../../agent-host/workspace/index.ts";
import { uidDirname } from "../../../shared/paths/uid-dirname.ts";
import { btrfsLoopDataRoot } from "../../support/btrfs-loop.ts";
import { testLogger } from "../../support/test-logger.ts";
import { expectGapFree, type RunWorld, runWorld, UID } from "../runs/run-harness.ts";
import { GEM } from "../sandbox/sandbox-fixture.ts";
import { treeManifest } from "./tree-manifest.ts";

// On the default data root (copy), and on btrfs, where the managed Workdir is a subvolume
// and the checkpoint a snapshot (docs/decisions/0190).
describe.each(["copy", "snapshot"] as const)("a run with agent.checkpoint, %s mode", (mode) => {
  let world: RunWorld;
  let checkpoints: Checkpoints;

  beforeEach(async () => {
    world = await runWorld(
      {},
      "container",
      mode === "snapshot" ? { dataRoot: btrfsLoopDataRoot } : {},
    );
    const sys = createLibcSyscalls();
    const subvolumes = detectSubvolumes({ dataRoot: world.dataRoot.path, sys }, "checkpoints");
    expect(subvolumes !== undefined).toBe(mode === "snapshot");
    checkpoints = new Checkpoints({
      db: world.db,
      store: createCheckpointStore({
        dataRoot: world.dataRoot.path,
        sys,
        resolver: createPathResolver(sys),
        cp: createCheckpointSyscalls(),
        mode: "copy",
        owner: { uid: GEM, gid: GEM },
        maxEntries: 100_000,
        maxDepth: 64,
        ...(subvolumes === undefined ? {} : { subvolumes }),
      }),
      nodeId: world.nodeId,
      workspaceBytes: async () => 0,
      defaultWorkspaceBytes: 1024 ** 3,
      logger: testLogger(),
    });
  });
  afterEach(async () => {
    await world.cleanup();
  });

  // "Undo this run" end to end, minus HTTP: a run with agent.checkpoint in a real sandbox
  // adds, modifies, deletes, renames and chmods; the checkpoint its event names restores
  // the Workdir exactly as it was before the run.
  it("checkpoints before the first command, names it in checkpoint.created, and its restore undoes the run", async () => {
    await world.worker({ extra: { beforeRun: beforeRunCheckpoint(checkpoints) } });
    const project = await world.project();
    const thread = await world.thread(project);
    const workdir = await world.userWorkspaces.ensureManagedWorkdir(UID, project.workdirPath);
    await workdir.ensureDir("src");
    await workdir.writeFile("src/main.py", "print('v1')\n");
    await workdir.writeFile("notes.txt", "keep me\n");
    await workdir.writeFile("old-name.txt", "renamed by the run\n");
    workdir.close();
    const onHost = join(
      world.dataRoot.path,
      "users",
      uidDirname(UID),
      "workspace",
      project.workdirPath,
    );
    writeFileSync(join(onHost, "unused"), ""); // one more file the run deletes
    const before = treeManifest(onHost, true);

    const runId = await world.submit(
      thread,
      "echo v2 > src/main.py && rm notes.txt unused && mv old-name.txt new-name.txt && chmod 600 src/main.py && mkdir -p added && echo x > added/f",
      { checkpoint: true },
    );
    const run = await world.waitForRun(runId);
    expect(run.status).toBe("succeeded");
    const events = await world.events(runId);
    expectGapFree(events);
    expect(events.map((e) => e.type).slice(0, 3)).toEqual([
      "checkpoint.created",
      "run.status",
      "tool.started",
    ]);
    const created = events.find((e) => e.type === "checkpoint.created")?.data as {
      checkpoint_id: string;
    };
    const row = await checkpoints.find({ uid: UID, threadId: thread }, created.checkpoint_id);
    expect(row).toMatchObject({ source: "run", runId, files: 4 });
    expect(treeManifest(onHost, true)).not.toEqual(before);

    const target = { uid: UID, threadId: thread, workdirPath: project.workdirPath };
    await checkpoints.restore(target, created.checkpoint_id, AbortSignal.timeout(30_000));
    // The Workdir as the run's first command found it: the files from before the run, and
    // the outputs/ directory the run's preparation made (which also moved the root's mtime).
    const restored = treeManifest(onHost, true);
    const checkpointDir = join(
      world.dataRoot.path,
      "checkpoints",
      uidDirname(UID),
      created.checkpoint_id,
    );
    expect(restored).toEqual(treeManifest(checkpointDir, true));
    // On btrfs the Workdir is a subvolume and the checkpoint a snapshot of it (inode 256).
    expect([lstatSync(onHost).ino, lstatSync(checkpointDir).ino].map((i) => i === 256)).toEqual(
      mode === "snapshot" ? [true, true] : [false, false],
    );
    const notRoot = (lines: string[]) =>
      lines.filter((l) => !l.startsWith(". ") && !l.startsWith("outputs "));
    expect(notRoot(restored)).toEqual(notRoot(before));
    expect(restored.some((l) => l.startsWith("outputs dir"))).toBe(true);

    // Without the option: no checkpoint, no event.
    const second = await world.submit(thread, "echo again > again.txt", {});
    expect((await world.waitForRun(second)).status).toBe("succeeded");
    expect((await world.events(second)).map((e) => e.type)).not.toContain("checkpoint.created");
    expect(
      (await checkpoints.list({ uid: UID, threadId: thread })).map((c) => c.runId),
    ).not.toContain(second);
  });
});
