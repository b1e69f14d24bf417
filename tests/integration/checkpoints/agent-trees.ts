import { execFileSync } from "node:child_process";
import {
  chmodSync,
  mkdirSync,
  renameSync,
  rmSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";

/** A small Workdir: nested directories, modes, exact mtimes, a 300 KB binary, an empty file. */
export function plantTree(dir: string): void {
  mkdirSync(join(dir, "bin"), { recursive: true });
  mkdirSync(join(dir, "docs", "deep"), { recursive: true });
  writeFileSync(join(dir, "a.txt"), "alpha\n");
  writeFileSync(join(dir, "empty.txt"), "");
  writeFileSync(join(dir, "bin", "run.sh"), "#!/bin/sh\necho run\n", { mode: 0o755 });
  writeFileSync(join(dir, "docs", "notes.txt"), "# notes\n");
  writeFileSync(join(dir, "docs", "deep", "x.bin"), Buffer.alloc(300_000, 7));
  chmodSync(join(dir, "docs", "deep", "x.bin"), 0o640);
  const paths = [
    "a.txt",
    "empty.txt",
    "bin/run.sh",
    "docs/notes.txt",
    "docs/deep/x.bin",
    "docs/deep",
    "docs",
    "bin",
  ];
  for (const [i, rel] of paths.entries()) {
    utimesSync(join(dir, rel), 1_700_000_000.25 + i, 1_700_000_000.123456 + i);
  }
}

/** What the run does: adds, modifies, deletes, renames, chmods, plants a link and a FIFO. */
export function agentRun(dir: string): void {
  writeFileSync(join(dir, "new.txt"), "added by the run\n");
  mkdirSync(join(dir, "added", "sub"), { recursive: true });
  writeFileSync(join(dir, "added", "sub", "f"), "x");
  writeFileSync(join(dir, "a.txt"), "changed\n");
  rmSync(join(dir, "docs", "notes.txt"));
  renameSync(join(dir, "bin", "run.sh"), join(dir, "bin", "go.sh"));
  chmodSync(join(dir, "docs", "deep", "x.bin"), 0o600);
  symlinkSync("/etc", join(dir, "etc-link"));
  execFileSync("mkfifo", [join(dir, "pipe")]);
}
