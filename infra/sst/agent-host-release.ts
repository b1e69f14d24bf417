import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { gzipSync } from "node:zlib";

// The agent-host release a deploy hands to its nodes: the repository's code as install.sh
// copies it (no dependencies, no local state, no tests), as a tarball whose bytes depend
// only on the files' names, modes and contents. So a deploy without code changes uploads
// the same object and leaves the launch template, and the running nodes, alone.

/** What install.sh leaves out of /opt/workcell, plus the console's build output. */
export const RELEASE_EXCLUDES = [
  "./node_modules",
  "./.data",
  "./.tools",
  "./.git",
  "./.sst",
  "./.wrangler",
  "./tests",
  "./coverage",
  "./web/dist",
] as const;

export type AgentHostRelease = { file: string; sha256: string; key: string };

/** Writes `<outDir>/workcell-agent-host-<sha256>.tar.gz` from the checkout at `root`. */
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
      ...RELEASE_EXCLUDES.map((path) => `--exclude=${path}`),
      "-c",
      ".",
    ],
    { maxBuffer: 1 << 30, timeout: 120_000 },
  );
  // Node's gzip header carries no name and a zero mtime: equal input, equal bytes.
  const gz = gzipSync(tar, { level: 9 });
  const sha256 = createHash("sha256").update(gz).digest("hex");
  mkdirSync(outDir, { recursive: true });
  const key = `agent-host/workcell-agent-host-${sha256}.tar.gz`;
  const file = join(outDir, `workcell-agent-host-${sha256}.tar.gz`);
  writeFileSync(file, gz);
  return { file, sha256, key };
}
