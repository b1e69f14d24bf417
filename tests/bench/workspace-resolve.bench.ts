// (b) Resolving a 6-level path through the safe layer (validate, openat2 or a no-follow
// walk beneath the Workdir, fstat, close) against fs.stat of the absolute path. Target: ≤ 3×
// against fs.stat (the promise API, as the layer's stat is a promise too); fs.statSync is
// shown as a stricter reference.
import { mkdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { stat } from "node:fs/promises";
import { join } from "node:path";
import { benchWorkdirs } from "./bench-workdirs.ts";
import { benchTargets, measure, report } from "./measure.ts";

const RUNS = 200;
const targets = benchTargets("workspace-resolve", [
  { measure: "openat2-stat", op: "<=", target: 3 },
]);
const BATCH = 200;
const relative = "level1/level2/level3/level4/level5/file.txt";

const { root, absoluteWorkdir, fsOpenat2, fsWalk } = await benchWorkdirs();
try {
  const absolute = join(absoluteWorkdir, relative);
  mkdirSync(join(absolute, ".."), { recursive: true });
  writeFileSync(absolute, "x");

  const baseline = await measure("fs.promises.stat(absolute) (baseline)", () => stat(absolute), {
    runs: RUNS,
    batch: BATCH,
  });
  const statSyncSample = await measure(
    "fs.statSync(absolute) (reference)",
    () => statSync(absolute),
    {
      runs: RUNS,
      batch: BATCH,
    },
  );
  const ours = await measure("WorkspaceFs.stat (openat2)", () => fsOpenat2.stat(relative), {
    runs: RUNS,
    batch: BATCH,
  });
  const walk = await measure("WorkspaceFs.stat (walk)", () => fsWalk.stat(relative), {
    runs: RUNS,
    batch: BATCH,
  });
  report("resolve + stat of a 6-level path", baseline, [statSyncSample, ours, walk]);
  targets.record("openat2-stat", ours.medianMs / baseline.medianMs);
  fsOpenat2.close();
  fsWalk.close();
} finally {
  rmSync(root, { recursive: true, force: true });
}
