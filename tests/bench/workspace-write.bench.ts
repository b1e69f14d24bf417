// (a) A no-clobber write through the safe layer (temp file O_EXCL, fchmod, publish with
// RENAME_NOREPLACE, all descriptor-relative) against a plain fs.writeFile into the same
// directory: 1,000 small files per repetition, fresh names each time. Target: ≤ 1.5×.
import { rmSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { benchWorkdirs } from "./bench-workdirs.ts";
import { benchTargets, measure, report } from "./measure.ts";

const FILES = 1000;
const targets = benchTargets("workspace-write", [
  { measure: "no-clobber-write-openat2", op: "<=", target: 1.5 },
  { measure: "no-clobber-write-walk", op: "<=", target: 1.5 },
]);
const RUNS = 15;
const data = Buffer.alloc(512, 97);

const { root, absoluteWorkdir, fsOpenat2, fsWalk } = await benchWorkdirs();
try {
  const absolute = absoluteWorkdir;
  let round = 0;

  const baseline = await measure(
    `fs.writeFile × ${FILES} (baseline)`,
    async () => {
      const r = round++;
      for (let i = 0; i < FILES; i++) await writeFile(join(absolute, `b-${r}-${i}`), data);
    },
    { runs: RUNS, warmupRuns: 2 },
  );
  const samples = [];
  for (const [name, fs] of [
    ["openat2", fsOpenat2],
    ["walk", fsWalk],
  ] as const) {
    samples.push(
      await measure(
        `WorkspaceFs.writeFile (no-clobber, ${name}) × ${FILES}`,
        async () => {
          const r = round++;
          for (let i = 0; i < FILES; i++) await fs.writeFile(`s-${r}-${i}`, data);
        },
        { runs: RUNS, warmupRuns: 2 },
      ),
    );
  }
  report(`no-clobber write of ${FILES} files of ${data.length} bytes`, baseline, samples);
  for (const [i, name] of ["openat2", "walk"].entries()) {
    const sample = samples[i];
    if (sample) targets.record(`no-clobber-write-${name}`, sample.medianMs / baseline.medianMs);
  }
  fsOpenat2.close();
  fsWalk.close();
} finally {
  rmSync(root, { recursive: true, force: true });
}
