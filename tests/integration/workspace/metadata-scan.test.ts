import { execFileSync } from "node:child_process";
import { mkdirSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  createLibcSyscalls,
  createPathResolver,
  createUserWorkspaces,
  type MetadataScanLimits,
  type WorkspaceFs,
} from "../../../agent-host/workspace/index.ts";
import { uidDirname } from "../../../shared/paths/uid-dirname.ts";
import { type DataRoot, freshDataRoot } from "../../support/data-root.ts";

const UID = "snap";
const WORKDIR = "projects/00000000-0000-4000-8000-00000000000a";
const WIDE = { maxEntries: 1000, maxDepth: 16, timeoutMs: 10_000 };

let root: DataRoot;
let workdir: WorkspaceFs;
let hostDir: string;

beforeEach(async () => {
  root = await freshDataRoot();
  const sys = createLibcSyscalls();
  const workspaces = createUserWorkspaces({
    dataRoot: root.path,
    sys,
    resolver: createPathResolver(sys),
  });
  workdir = await workspaces.ensureManagedWorkdir(UID, WORKDIR);
  hostDir = join(root.path, "users", uidDirname(UID), "workspace", WORKDIR);
});
afterEach(async () => {
  workdir.close();
  await root.remove();
});

/** Files (and their directories) on the host, under the Workdir. */
function tree(files: string[]): void {
  for (const file of files) {
    mkdirSync(join(hostDir, file, ".."), { recursive: true });
    writeFileSync(join(hostDir, file), file);
  }
}

const signal = () => AbortSignal.timeout(30_000);

const takeWorkdirSnapshot = (fs: WorkspaceFs, limits: MetadataScanLimits, signal: AbortSignal) =>
  fs.scanMetadata("", limits, { signal });

describe("scanMetadata", () => {
  it("records regular files with size and mtime, and never follows a symlink out of the Workdir", async () => {
    tree(["a.txt", "d/b.txt", "d/e/c.txt"]);
    const outside = join(root.path, "outside");
    mkdirSync(outside);
    writeFileSync(join(outside, "secret.txt"), "secret");
    symlinkSync(outside, join(hostDir, "escape"));
    symlinkSync(join(outside, "secret.txt"), join(hostDir, "d", "secret-link"));

    const snap = await takeWorkdirSnapshot(workdir, WIDE, signal());
    expect([...snap.files.keys()].sort()).toEqual(["a.txt", "d/b.txt", "d/e/c.txt"]);
    expect(snap.files.get("d/b.txt")?.size).toBe("d/b.txt".length);
    expect(snap.files.get("a.txt")?.mtimeMs).toBeGreaterThan(0);
    expect(snap.files.get("a.txt")?.ctimeMs).toBeGreaterThan(0);
    expect([...snap.complete].sort()).toEqual(["", "d", "d/e"]);
    expect(snap.truncated).toBe(false);
  });

  it("stops at the depth bound: deeper directories are seen, not listed", async () => {
    tree(["top.txt", "one/two/three/deep.txt"]);
    const snap = await takeWorkdirSnapshot(workdir, { ...WIDE, maxDepth: 1 }, signal());
    expect([...snap.files.keys()]).toEqual(["top.txt"]);
    expect(snap.dirs.has("one/two")).toBe(true);
    expect(snap.complete.has("one/two")).toBe(false);
    expect(snap.complete.has("one")).toBe(true);
    expect(snap.truncated).toBe(true);
  });

  it("stops at the entry bound; a directory that fills it exactly is complete", async () => {
    tree(["a", "b", "c"]);
    const exact = await takeWorkdirSnapshot(workdir, { ...WIDE, maxEntries: 3 }, signal());
    expect(exact.files.size).toBe(3);
    expect(exact.complete.has("")).toBe(true);
    expect(exact.truncated).toBe(false);

    const short = await takeWorkdirSnapshot(workdir, { ...WIDE, maxEntries: 2 }, signal());
    expect(short.files.size).toBe(2);
    expect(short.complete.has("")).toBe(false);
    expect(short.truncated).toBe(true);
  });

  it("past its time budget only the Workdir itself is listed", async () => {
    tree(["a", "d/b"]);
    const snap = await takeWorkdirSnapshot(workdir, { ...WIDE, timeoutMs: 0 }, signal());
    expect([...snap.files.keys()]).toEqual(["a"]);
    expect([...snap.complete]).toEqual([""]);
    expect(snap.truncated).toBe(true);
  });

  it("a FIFO is skipped without blocking; a name it cannot report makes the scan truncated", async () => {
    tree(["a.txt"]);
    execFileSync("mkfifo", [join(hostDir, "pipe")]);
    const clean = await takeWorkdirSnapshot(workdir, WIDE, signal());
    expect([...clean.files.keys()]).toEqual(["a.txt"]);
    expect(clean.truncated).toBe(false);
    // The layer's temp prefix: hidden from listings, so it must not hide a change here.
    writeFileSync(join(hostDir, ".wc-tmp-planted"), "hidden?");
    const planted = await takeWorkdirSnapshot(workdir, WIDE, signal());
    expect(planted.truncated).toBe(true);
  });

  it("an abort rejects", async () => {
    tree(["a"]);
    await expect(takeWorkdirSnapshot(workdir, WIDE, AbortSignal.abort())).rejects.toThrow();
  });
});
