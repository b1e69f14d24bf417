import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, lstatSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { gzipSync } from "node:zlib";

// The agent-host release a deploy hands to its nodes: the repository's code as install.sh
// copies it (no dependencies, no local state, no tests), as a tarball whose bytes depend
// only on the files' names, modes and contents. So a deploy without code changes uploads
// the same object and leaves the launch template, and the running nodes, alone.

/** What install.sh leaves out of /opt/workcell, plus the console's build output. */
export const RELEASE_EXCLUDES = [
  "node_modules",
  ".data",
  ".tools",
  ".git",
  ".sst",
  ".wrangler",
  "tests",
  "coverage",
  "web/dist",
] as const;

export type AgentHostRelease = { file: string; sha256: string; key: string };

/**
 * The files of the release, relative to `root`: what git tracks or would track (so a
 * git-ignored `.env` or key file in the operator's checkout never reaches the bucket),
 * minus RELEASE_EXCLUDES. Outside a git checkout (an unpacked source tarball): every file.
 */
export function releaseFiles(root: string): string[] {
  const listed = existsSync(`${root}/.git`)
    ? execFileSync(
        "git",
        ["-C", root, "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        {
          maxBuffer: 1 << 28,
          timeout: 60_000,
        },
      )
        .toString("utf8")
        .split("\0")
    : execFileSync("find", [".", "-type", "f,l", "-printf", "%P\\0"], {
        cwd: root,
        maxBuffer: 1 << 28,
        timeout: 60_000,
      })
        .toString("utf8")
        .split("\0");
  const excluded = (path: string) =>
    RELEASE_EXCLUDES.some((x) => path === x || path.startsWith(`${x}/`));
  // A tracked file deleted in the working tree is not part of what is deployed.
  const present = (path: string) => {
    try {
      lstatSync(`${root}/${path}`);
      return true;
    } catch {
      return false;
    }
  };
  return [...new Set(listed)].filter((p) => p !== "" && !excluded(p) && present(p)).sort();
}

/**
 * Writes `<outDir>/workcell-agent-host-<sha256>.tar.gz` from the checkout at `root`;
 * `outDir` is emptied first (it is the deploy's own folder).
 */
export function buildAgentHostRelease(root: string, outDir: string): AgentHostRelease {
  const tar = execFileSync(
    "tar",
    [
      "-C",
      root,
      "--sort=name",
      "--mtime=@0",
      "--owner=0",
      "--group=0",
      "--numeric-owner",
      "--format=posix",
      "--pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime",
      "--no-recursion",
      "--null",
      "--files-from=-",
      "-c",
    ],
    { input: releaseFiles(root).join("\0"), maxBuffer: 1 << 30, timeout: 120_000 },
  );
  // Node's gzip header carries no name and a zero mtime: equal input, equal bytes.
  const gz = gzipSync(tar, { level: 9 });
  const sha256 = createHash("sha256").update(gz).digest("hex");
  // The folder holds this deploy's release only (earlier ones would pile up in .sst/).
  rmSync(outDir, { recursive: true, force: true });
  mkdirSync(outDir, { recursive: true });
  const key = `agent-host/workcell-agent-host-${sha256}.tar.gz`;
  const file = join(outDir, `workcell-agent-host-${sha256}.tar.gz`);
  writeFileSync(file, gz);
  return { file, sha256, key };
}
