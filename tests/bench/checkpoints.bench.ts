// Checkpoints (issue 39): a checkpoint of a 1,000-file, 100 MB Workdir against `cp -a` of
// the same tree, on an XFS loop filesystem with reflink (FICLONE per file; target ≤ 0.1)
// and on the default data root (a bounded copy; target ≤ 1.5); and a restore after a run
// that changed 10 of the 1,000 files against the full checkpoint (target ≤ 0.2). Needs
// root and xfsprogs for the reflink lines (SKIPPED otherwise). The warm next turn with
// before-run checkpoints on/off is checkpoints-warm-turn.bench.ts.
import { execFileSync } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import {
  createCheckpointStore,
  detectCheckpointMode,
} from "../../agent-host/checkpoints/checkpoint-store.ts";
import { createCheckpointSyscalls } from "../../agent-host/checkpoints/checkpoint-syscalls.ts";
import { restoreWorkdir } from "../../agent-host/checkpoints/restore-workdir.ts";
import { createLibcSyscalls, createPathResolver } from "../../agent-host/workspace/index.ts";
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

async function benchOn(root: DataRoot, label: "reflink" | "copy"): Promise<void> {
  const sys = createLibcSyscalls();
  const cp = createCheckpointSyscalls();
  const mode = detectCheckpointMode({ dataRoot: root.path, sys, cp });
  const store = createCheckpointStore({
    dataRoot: root.path,
    sys,
    resolver: createPathResolver(sys),
    cp,
    mode,
    maxEntries: 100_000,
    maxDepth: 64,
  });
  const workdir = join(root.path, "users", UID, "workspace", WORKDIR);
  const chunk = Buffer.alloc(FILE_BYTES, 7);
  for (let d = 0; d < 10; d++) {
    mkdirSync(join(workdir, `d${d}`), { recursive: true });
    for (let f = 0; f < FILES / 10; f++) writeFileSync(join(workdir, `d${d}`, `f${f}`), chunk);
  }
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
      before: async () => rmSync(join(copies, "copy"), { recursive: true, force: true }),
    },
  );
  const ids: string[] = [];
  const taken = await measure(
    `checkpoint (${mode})`,
    async () => {
      const id = randomUUID();
      await store.take(UID, WORKDIR, id, AbortSignal.timeout(600_000));
      ids.push(id);
    },
    { runs: RUNS, warmupRuns: 1 },
  );
  report(`checkpoint vs cp -a (${label})`, baseline, [taken]);
  if (mode === label)
    targets.record(`checkpoint-${label}-vs-cp`, taken.medianMs / baseline.medianMs);
  else targets.skip(`checkpoint-${label}-vs-cp`, `the data root's mode is ${mode}`);
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

const plain = await freshDataRoot();
try {
  await benchOn(plain, "copy");
} finally {
  await plain.remove();
}
let xfs: DataRoot | undefined;
try {
  xfs = await xfsLoopDataRoot(2 * 1024 ** 3);
} catch (error) {
  targets.skip(
    "checkpoint-reflink-vs-cp",
    `no XFS loop filesystem: ${(error as Error).message.split("\n")[0]}`,
  );
}
if (xfs !== undefined) {
  try {
    await benchOn(xfs, "reflink");
  } finally {
    await xfs.remove();
  }
}
