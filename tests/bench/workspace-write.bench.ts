// (a) A no-clobber write through the safe layer (temp file O_EXCL, fchmod, publish with
// RENAME_NOREPLACE, all descriptor-relative) against a plain fs.writeFile into the same
// directory: 1,000 small files per repetition, fresh names each time. Target: ≤ 1.5×.
import { mkdtempSync, rmSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  createLibcSyscalls,
  createPathResolver,
  createUserWorkspaces,
  type ResolverKind,
} from "../../agent-host/workspace/index.ts";
import { measure, report } from "./measure.ts";

const FILES = 1000;
const RUNS = 15;
const data = Buffer.alloc(512, 97);
const root = mkdtempSync(join(tmpdir(), "workcell-bench-"));
const workdirPath = "projects/0b9f7a1e-1b2c-4d3e-8f90-123456789abc";

try {
  const sys = createLibcSyscalls();
  const open = async (kind: ResolverKind) =>
    createUserWorkspaces({
      dataRoot: root,
      sys,
      resolver: createPathResolver(sys, { kind }),
    }).ensureManagedWorkdir("bench", workdirPath);
  const fsOpenat2 = await open("openat2");
  const fsWalk = await open("walk");
  const absolute = join(root, "users", "bench", "workspace", workdirPath);
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
  fsOpenat2.close();
  fsWalk.close();
} finally {
  rmSync(root, { recursive: true, force: true });
}
