import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdirSync, mkdtempSync, readFileSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { buildAgentHostRelease } from "../../../../infra/sst/agent-host-release.ts";

// The release tarball a deploy uploads for its nodes: named by its checksum, equal bytes
// for equal code (so an unchanged deploy does not roll the nodes), without local state.

function checkout(): string {
  const root = mkdtempSync(join(tmpdir(), "release-src-"));
  for (const dir of ["infra/agent-host", "agent-host", "node_modules/x", "tests", ".sst"]) {
    mkdirSync(join(root, dir), { recursive: true });
  }
  writeFileSync(join(root, "infra/agent-host/install.sh"), "#!/bin/bash\n");
  writeFileSync(join(root, "agent-host/main.ts"), "export {};\n");
  writeFileSync(join(root, "package-lock.json"), "{}\n");
  for (const junk of ["node_modules/x/a.js", "tests/t.ts", ".sst/state"]) {
    writeFileSync(join(root, junk), "local state\n");
  }
  return root;
}

const listing = (file: string) =>
  execFileSync("tar", ["-tzf", file]).toString().split("\n").filter(Boolean).sort();

describe("agent-host release", () => {
  test("holds the code install.sh installs and none of the checkout's local state", () => {
    const release = buildAgentHostRelease(checkout(), mkdtempSync(join(tmpdir(), "rel-")));
    expect(listing(release.file)).toEqual([
      "agent-host/main.ts",
      "infra/agent-host/install.sh",
      "package-lock.json",
    ]);
    const sha = createHash("sha256").update(readFileSync(release.file)).digest("hex");
    expect(release.sha256).toBe(sha);
    expect(release.key).toBe(`agent-host/workcell-agent-host-${sha}.tar.gz`);
  });

  test("in a git checkout, git-ignored files (an operator's .env) stay out; new files go in", () => {
    const root = checkout();
    const git = (...args: string[]) =>
      execFileSync("git", [
        "-C",
        root,
        "-c",
        "user.email=t@example.com",
        "-c",
        "user.name=t",
        ...args,
      ]);
    git("init", "-q");
    writeFileSync(join(root, ".gitignore"), ".env\nnode_modules/\n.sst/\n");
    writeFileSync(join(root, ".env"), "DATABASE_URL=postgres://admin:hunter2@prod/workcell\n");
    git("add", ".gitignore", "agent-host", "infra", "package-lock.json");
    git("commit", "-qm", "code");
    writeFileSync(join(root, "agent-host/new-file.ts"), "export {};\n");
    const release = buildAgentHostRelease(root, mkdtempSync(join(tmpdir(), "rel-")));
    expect(listing(release.file)).toEqual([
      ".gitignore",
      "agent-host/main.ts",
      "agent-host/new-file.ts",
      "infra/agent-host/install.sh",
      "package-lock.json",
    ]);
    expect(
      execFileSync("bash", ["-c", `gzip -dc '${release.file}' | grep -c hunter2 || true`])
        .toString()
        .trim(),
    ).toBe("0");
  });

  test("equal code gives equal bytes whatever the timestamps; changed code another key", () => {
    const root = checkout();
    const first = buildAgentHostRelease(root, mkdtempSync(join(tmpdir(), "rel-")));
    utimesSync(join(root, "agent-host/main.ts"), new Date(1e12), new Date(1e12));
    const again = buildAgentHostRelease(root, mkdtempSync(join(tmpdir(), "rel-")));
    expect(again.sha256).toBe(first.sha256);
    writeFileSync(join(root, "agent-host/main.ts"), "export const changed = 1;\n");
    const changed = buildAgentHostRelease(root, mkdtempSync(join(tmpdir(), "rel-")));
    expect(changed.sha256).not.toBe(first.sha256);
  });
});
