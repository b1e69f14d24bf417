// Checkpoints (issue 39): a checkpoint of a 1,000-file, 100 MB Workdir against `cp -a` of
// the same tree: on a btrfs loop filesystem, where the Workdir is a subvolume and the
// checkpoint one read-only snapshot (the reflink line, target ≤ 0.1, docs/decisions/0190);
// on an XFS loop filesystem with reflink (FICLONE per file, printed beside it) and on the
// default data root (a bounded copy; target ≤ 1.5); and a restore after a run that changed
// 10 of the 1,000 files against the full checkpoint (target ≤ 0.2). Needs root,
// btrfs-progs and xfsprogs for the loop filesystems (SKIPPED otherwise). On the loop
// filesystems every copy and checkpoint starts synced (outside the timing), so none pays for
// writing out the one before: a snapshot commits the filesystem's transaction, and right
// after a 100 MB `cp` that commit writes the copy out (decision 0190). The default data
// root's line is measured as it always was. The warm next turn with before-run checkpoints
// on/off is checkpoints-warm-turn.bench.ts.
import { execFileSync } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { restoreWorkdir } from "../../agent-host/checkpoints/restore-workdir.ts";
import { btrfsLoopDataRoot } from "../support/btrfs-loop.ts";
import { checkpointStoreOn } from "../support/checkpoint-store.ts";
import { type DataRoot, freshDataRoot } from "../support/data-root.ts";
import { xfsLoopDataRoot } from "../support/xfs-loop.ts";
import { benchTargets, measure, report } from "./measure.ts";

const FILES = 1000;
const FILE_BYTES = 100 * 1024;
const RUNS = 5;
const UID = "bench";
const WORKDIR = "projects/0b9f7a1e-1b2c-4d3e-8f90-123456789abc";

const targets = benchTargets("checkpoints", [
  { measure: "checkpoint-reflink-vs-cp", op: "<=", target: 0.1 },
  { measure: "checkpoint-copy-vs-cp", op: "<=", target: 1.5 },
  { measure: "restore-10-of-1000-vs-checkpoint", op: "<=", target: 0.2 },
  // The warm next turn with before-run checkpoints on/off: checkpoints-warm-turn.bench.ts.
]);

/** Where each run happens: the snapshot run records the reflink line. */
type Label = "snapshot" | "reflink per file" | "copy";

async function benchOn(root: DataRoot, label: Label): Promise<void> {
  const { store, mode, subvolumes, workdir } = await checkpointStoreOn(root, UID, WORKDIR);
  const chunk = Buffer.alloc(FILE_BYTES, 7);
  for (let d = 0; d < 10; d++) {
    mkdirSync(join(workdir, `d${d}`), { recursive: true });
    for (let f = 0; f < FILES / 10; f++) writeFileSync(join(workdir, `d${d}`, `f${f}`), chunk);
  }
  const settle = () => {
    if (label !== "copy") execFileSync("sync");
  };
  const copies = join(root.path, "cp-a");
  mkdirSync(copies);
  const baseline = await measure(
    `cp -a --reflink=never of ${FILES} files, ${(FILES * FILE_BYTES) / 2 ** 20} MB (${label} data root)`,
    async () => {
      // --reflink=never: coreutils 9 reflinks by default where it can, and the issue's
      // baseline is a copy of the bytes.
      execFileSync("cp", ["-a", "--reflink=never", workdir, join(copies, "copy")]);
    },
    // Each copy goes before the next, so the filesystem holds one at a time.
    {
      runs: RUNS,
      warmupRuns: 1,
      before: async () => {
        rmSync(join(copies, "copy"), { recursive: true, force: true });
        settle();
      },
    },
  );
  const ids: string[] = [];
  const taken = await measure(
    `checkpoint (${label})`,
    async () => {
      const id = randomUUID();
      await store.take(UID, WORKDIR, id, AbortSignal.timeout(600_000));
      ids.push(id);
    },
    // Like the copies: the one before goes first (untimed), so the filesystem holds one at
    // a time and no run pays for writing back the dirty pages of those before it.
    {
      runs: RUNS,
      warmupRuns: 1,
      before: async () => {
        for (const id of ids.splice(0)) store.remove(UID, id);
        settle();
      },
    },
  );
  report(`checkpoint vs cp -a (${label})`, baseline, [taken]);
  recordCheckpointLine(label, mode, subvolumes !== undefined, taken.medianMs / baseline.medianMs);
  if (label === "snapshot") {
    // Printed, no target: coreutils' own `cp -a`, which reflinks each file here.
    const reflinked = await measure(
      "cp -a (coreutils 9 reflinks each file where it can)",
      async () => execFileSync("cp", ["-a", workdir, join(copies, "copy")]),
      {
        runs: RUNS,
        warmupRuns: 1,
        before: async () => {
          rmSync(join(copies, "copy"), { recursive: true, force: true });
          settle();
        },
      },
    );
    report("checkpoint vs a reflinking cp -a (snapshot)", reflinked, [taken]);
  }
  if (label !== "copy") return;
  const restored = await measure(
    "restore after a run that changed 10 of 1,000 files",
    async () => {
      for (let f = 0; f < 10; f++) writeFileSync(join(workdir, "d0", `f${f}`), "changed");
      const id = ids.at(-1) as string;
      await restoreWorkdir(
        store,
        { restoreId: randomUUID(), uid: UID, workdirPath: WORKDIR, checkpointId: id },
        AbortSignal.timeout(600_000),
      );
    },
    { runs: RUNS, warmupRuns: 1 },
  );
  report("restore of 10 changed files vs a full checkpoint", taken, [restored]);
  targets.record("restore-10-of-1000-vs-checkpoint", restored.medianMs / taken.medianMs);
}

function recordCheckpointLine(label: Label, mode: string, snapshots: boolean, ratio: number): void {
  if (label === "reflink per file") return; // printed above, beside the snapshot line
  const measure = label === "copy" ? "checkpoint-copy-vs-cp" : "checkpoint-reflink-vs-cp";
  const ready = label === "copy" ? mode === "copy" : snapshots;
  if (ready) targets.record(measure, ratio);
  else targets.skip(measure, `the data root's mode is ${mode}, subvolumes ${snapshots}`);
}

/** Runs benchOn on a loop filesystem; a machine without one gets the line SKIPPED. */
async function onLoop(make: () => Promise<DataRoot>, label: Label, line?: string) {
  let root: DataRoot | undefined;
  try {
    root = await make();
  } catch (error) {
    const why = `no ${label} loop filesystem: ${(error as Error).message.split("\n")[0]}`;
    if (line !== undefined) targets.skip(line, why);
    else console.log(why);
    return;
  }
  try {
    await benchOn(root, label);
  } finally {
    await root.remove();
  }
}

const plain = await freshDataRoot();
try {
  await benchOn(plain, "copy");
} finally {
  await plain.remove();
}
await onLoop(() => btrfsLoopDataRoot(2 * 1024 ** 3), "snapshot", "checkpoint-reflink-vs-cp");
await onLoop(() => xfsLoopDataRoot(2 * 1024 ** 3), "reflink per file");
