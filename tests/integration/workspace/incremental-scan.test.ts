// Incremental Workdir scans (docs/decisions/0156): after every kind of change a command can
// make, the incremental scan must equal a full walk taken at the same moment, and the change
// batch computed from it must equal the one computed from full walks. Real ext4, real
// fanotify, real mounts, real hard links: nothing here is simulated except a feed that
// reports lost events (to prove the fallback).
import { execFileSync } from "node:child_process";
import {
  appendFileSync,
  chmodSync,
  linkSync,
  mkdirSync,
  mkdtempSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { pino } from "pino";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { commandGrowth } from "../../../agent-host/quota/command-growth.ts";
import { diffWorkdirSnapshots } from "../../../agent-host/runs/change-batch/workdir-changes.ts";
import {
  type FanotifyFeed,
  openFanotifyFeed,
} from "../../../agent-host/workspace/fanotify-feed.ts";
import {
  type DerivedScan,
  IncrementalScans,
} from "../../../agent-host/workspace/incremental-scans.ts";
import {
  createLibcSyscalls,
  createPathResolver,
  createUserWorkspaces,
  type MetadataScan,
  type WorkspaceFs,
} from "../../../agent-host/workspace/index.ts";
import { openWorkdirScanner } from "../../../agent-host/workspace/open-workdir-scanner.ts";
import { uidDirname } from "../../../shared/paths/uid-dirname.ts";
import { type DataRoot, freshDataRoot } from "../../support/data-root.ts";

const UID = "inc";
const WORKDIR = "projects/00000000-0000-4000-8000-00000000000b";
const WIDE = { maxEntries: 10_000, maxDepth: 16, timeoutMs: 10_000 };

let root: DataRoot;
let workdir: WorkspaceFs;
let hostDir: string;
let userDir: string;
let feed: FanotifyFeed;
let scans: IncrementalScans;

beforeEach(async () => {
  root = await freshDataRoot();
  const sys = createLibcSyscalls();
  const workspaces = createUserWorkspaces({
    dataRoot: root.path,
    sys,
    resolver: createPathResolver(sys),
  });
  workdir = await workspaces.ensureManagedWorkdir(UID, WORKDIR);
  userDir = join(root.path, "users", uidDirname(UID), "workspace");
  hostDir = join(userDir, WORKDIR);
  const opened = openFanotifyFeed(root.path);
  if (!opened.ok) throw new Error(`this test needs a fanotify filesystem mark: ${opened.reason}`);
  feed = opened.feed;
  // No period walk: every scan after the first is incremental unless it must fall back.
  scans = new IncrementalScans({
    feed,
    fullWalkEveryMs: 1e12,
    maxRoots: 4,
    drainIntervalMs: 50,
  });
});
afterEach(async () => {
  scans.close();
  feed.close();
  workdir.close();
  await root.remove();
});

const signal = () => AbortSignal.timeout(30_000);
const at = (rel: string) => join(hostDir, rel);

function tree(files: string[]): void {
  for (const file of files) {
    mkdirSync(join(hostDir, file, ".."), { recursive: true });
    writeFileSync(join(hostDir, file), file);
  }
}

function plain(scan: MetadataScan) {
  return {
    files: [...scan.files.entries()].sort(([a], [b]) => (a < b ? -1 : 1)),
    dirs: [...scan.dirs].sort(),
    complete: [...scan.complete].sort(),
    truncated: scan.truncated,
  };
}

/** Both scanners side by side, each keeping its previous scan as the diff's before. */
async function pair() {
  let inc = await workdir.scanMetadata("", WIDE, { signal: signal(), scanner: scans.scan });
  let full = await workdir.scanMetadata("", WIDE, { signal: signal() });
  expect(plain(inc)).toEqual(plain(full));
  return {
    /** Scans both ways and checks they agree, as snapshots and as change batches. */
    async step() {
      const nextInc = await workdir.scanMetadata("", WIDE, {
        signal: signal(),
        scanner: scans.scan,
      });
      const nextFull = await workdir.scanMetadata("", WIDE, { signal: signal() });
      expect(plain(nextInc)).toEqual(plain(nextFull));
      const batchInc = diffWorkdirSnapshots(inc, nextInc, 1000);
      const batchFull = diffWorkdirSnapshots(full, nextFull, 1000);
      expect(batchInc).toEqual(batchFull);
      inc = nextInc;
      full = nextFull;
      return { batch: batchInc, incremental: (nextInc as DerivedScan).derivedFrom !== undefined };
    },
  };
}

describe("incremental workdir scans", () => {
  it("report adds, deletes, renames and directory moves below subdirectories, incrementally", async () => {
    tree(["a.txt", "d/b.txt", "d/e/c.txt", "x/y/z.txt"]);
    const p = await pair();

    writeFileSync(at("d/e/new.txt"), "new");
    let r = await p.step();
    expect(r.incremental).toBe(true);
    expect(r.batch.items).toEqual([{ path: "d/e/new.txt", change: "added", size: 3 }]);

    renameSync(at("d/b.txt"), at("x/y/b.txt"));
    r = await p.step();
    expect(r.incremental).toBe(true);
    expect(r.batch.items.map((i) => `${i.change} ${i.path}`)).toEqual([
      "deleted d/b.txt",
      "added x/y/b.txt",
    ]);

    renameSync(at("d"), at("moved"));
    r = await p.step();
    expect(r.incremental).toBe(true);
    expect(r.batch.items.map((i) => `${i.change} ${i.path}`)).toEqual([
      "deleted d/e/c.txt",
      "deleted d/e/new.txt",
      "added moved/e/c.txt",
      "added moved/e/new.txt",
    ]);

    rmSync(at("x"), { recursive: true });
    mkdirSync(at("n/m/o"), { recursive: true });
    writeFileSync(at("n/m/o/deep.txt"), "deep");
    r = await p.step();
    expect(r.batch.items.map((i) => `${i.change} ${i.path}`)).toEqual([
      "added n/m/o/deep.txt",
      "deleted x/y/b.txt",
      "deleted x/y/z.txt",
    ]);

    // A file replaced by a directory of the same name, and back.
    rmSync(at("a.txt"));
    mkdirSync(at("a.txt"));
    writeFileSync(at("a.txt/inner"), "i");
    r = await p.step();
    expect(r.batch.items.map((i) => `${i.change} ${i.path}`)).toEqual([
      "deleted a.txt",
      "added a.txt/inner",
    ]);
  });

  it("see writes that keep size and mtime, chmod and truncation (ctime changes)", async () => {
    tree(["d/keep.txt", "d/mode.txt", "d/cut.txt"]);
    const p = await pair();
    const before = statSync(at("d/keep.txt"));
    writeFileSync(at("d/keep.txt"), "D/KEEP.TXT");
    utimesSync(at("d/keep.txt"), before.atime, before.mtime);
    chmodSync(at("d/mode.txt"), 0o600);
    execFileSync("truncate", ["-s", "0", at("d/cut.txt")]);
    const r = await p.step();
    expect(r.incremental).toBe(true);
    expect(r.batch.items.map((i) => `${i.change} ${i.path}`)).toEqual([
      "modified d/cut.txt",
      "modified d/keep.txt",
      "modified d/mode.txt",
    ]);
  });

  it("see a write through a hard link made outside the Workdir, even with its mtime put back", async () => {
    tree(["d/target.txt", "other.txt"]);
    const outside = join(userDir, "elsewhere");
    mkdirSync(outside, { recursive: true });
    linkSync(at("d/target.txt"), join(outside, "alias"));
    const p = await pair();
    await p.step(); // the link itself changed target.txt's ctime (link count)

    const was = statSync(at("d/target.txt"));
    writeFileSync(join(outside, "alias"), "D/TARGET.TXT");
    utimesSync(join(outside, "alias"), was.atime, was.mtime);
    const r = await p.step();
    expect(r.incremental).toBe(true);
    expect(r.batch.items).toEqual([{ path: "d/target.txt", change: "modified", size: 12 }]);
  });

  it("see a write made through another mount namespace's bind mount, and through a shared mapping", async () => {
    tree(["d/mounted.txt", "d/mapped.txt"]);
    const p = await pair();
    const mnt = mkdtempSync(join(root.path, "mnt-"));
    execFileSync("unshare", [
      "--mount",
      "--propagation",
      "private",
      "sh",
      "-c",
      `mount --bind "$1" "$2" && printf more >> "$2/d/mounted.txt"`,
      "sh",
      hostDir,
      mnt,
    ]);
    let r = await p.step();
    expect(r.incremental).toBe(true);
    expect(r.batch.items).toEqual([{ path: "d/mounted.txt", change: "modified", size: 17 }]);

    // The descriptor is closed before the write: only the mapping's last release says so.
    execFileSync("python3", [
      "-c",
      "import mmap,os,sys\nfd=os.open(sys.argv[1],os.O_RDWR)\nm=mmap.mmap(fd,0)\nos.close(fd)\nm[0:1]=b'X'\nm.close()",
      at("d/mapped.txt"),
    ]);
    r = await p.step();
    expect(r.batch.items.map((i) => `${i.change} ${i.path}`)).toEqual(["modified d/mapped.txt"]);
  });

  it("never follow a directory swapped for a symlink, and report the layer's temp names as truncated", async () => {
    tree(["d/b.txt", "keep/k.txt"]);
    const outside = join(root.path, "secret");
    mkdirSync(outside);
    writeFileSync(join(outside, "s.txt"), "s");
    const p = await pair();
    renameSync(at("d"), at("gone"));
    symlinkSync(outside, at("d"));
    let r = await p.step();
    expect(r.batch.items.map((i) => `${i.change} ${i.path}`)).toEqual([
      "deleted d/b.txt",
      "added gone/b.txt",
    ]);
    writeFileSync(at("keep/.wc-tmp-x"), "hidden");
    r = await p.step();
    expect(r.batch.truncated).toBe(true);
  });

  it("fall back to the full walk when the feed lost events, and still report everything", async () => {
    tree(["d/b.txt"]);
    const lossy = new IncrementalScans({
      feed: { dev: feed.dev, drain: () => ({ inos: new Set(), lost: true }), close() {} },
      fullWalkEveryMs: 1e12,
      maxRoots: 4,
      drainIntervalMs: 50,
    });
    try {
      const first = await workdir.scanMetadata("", WIDE, { signal: signal(), scanner: lossy.scan });
      writeFileSync(at("d/b.txt"), "changed");
      const next = await workdir.scanMetadata("", WIDE, { signal: signal(), scanner: lossy.scan });
      expect((next as DerivedScan).derivedFrom).toBeUndefined();
      expect(diffWorkdirSnapshots(first, next, 100).items).toEqual([
        { path: "d/b.txt", change: "modified", size: 7 },
      ]);
    } finally {
      lossy.close();
    }
  });

  it("give two concurrent scans of one root the same exact answer", async () => {
    tree(["d/b.txt", "e/c.txt"]);
    const p = await pair();
    for (let i = 0; i < 30; i++) writeFileSync(at(`d/n${i}.txt`), "n");
    mkdirSync(at("new/deep/er"), { recursive: true });
    writeFileSync(at("new/deep/er/x.txt"), "x");
    const scan = () => workdir.scanMetadata("", WIDE, { signal: signal(), scanner: scans.scan });
    const [one, two] = await Promise.all([scan(), scan()]);
    const full = await workdir.scanMetadata("", WIDE, { signal: signal() });
    expect(plain(one)).toEqual(plain(full));
    expect(plain(two)).toEqual(plain(full));
    const r = await p.step();
    expect(r.batch.items).toHaveLength(31);
  });

  it("are what the run worker's scanner uses on this data root (openWorkdirScanner)", async () => {
    tree(["d/b.txt"]);
    const wired = openWorkdirScanner(root.path, pino({ level: "silent" }));
    try {
      const scan = () =>
        workdir.scanMetadata("", WIDE, { signal: signal(), scanner: wired.scanner });
      const first = await scan();
      writeFileSync(at("d/c.txt"), "c");
      const next = (await scan()) as DerivedScan;
      expect(next.derivedFrom?.base).toBe(first);
      expect(diffWorkdirSnapshots(first, next, 10).items).toEqual([
        { path: "d/c.txt", change: "added", size: 1 },
      ]);
    } finally {
      wired.close();
    }
  });

  it("report nothing, and re-list nothing, when nothing in the Workdir changed", async () => {
    tree(["d/b.txt"]);
    writeFileSync(join(root.path, "unrelated.txt"), "u");
    const p = await pair();
    appendFileSync(join(root.path, "unrelated.txt"), "more");
    const r = await p.step();
    expect(r.batch).toEqual({ items: [], truncated: false });
  });

  it("peek while a command runs (the quota watch, decision 0163) without breaking the change batch's derivation", async () => {
    tree(["d/a.txt", "e/b.txt"]);
    const scan = (scanner: typeof scans.scan) =>
      workdir.scanMetadata("", WIDE, { signal: signal(), scanner });
    const before = await scan(scans.scan);
    const growth = commandGrowth(before, () => scan(scans.peek));
    // Nothing changed yet: no growth, and the peek is the last scan itself.
    expect(await growth(signal())).toEqual({ bytes: 0, inodes: 0 });
    writeFileSync(at("d/big.bin"), Buffer.alloc(4096));
    expect(await growth(signal())).toEqual({ bytes: 4096, inodes: 1 });
    mkdirSync(at("f"));
    writeFileSync(at("f/c.txt"), "cc");
    expect(await growth(signal())).toEqual({ bytes: 4098, inodes: 3 });
    rmSync(at("e/b.txt"));
    // The after-scan derives from the command's before-scan, with every change since.
    const after = (await scan(scans.scan)) as DerivedScan;
    expect(after.derivedFrom?.base).toBe(before);
    const full = await workdir.scanMetadata("", WIDE, { signal: signal() });
    expect(plain(after)).toEqual(plain(full));
    expect(diffWorkdirSnapshots(before, after, 10)).toEqual(diffWorkdirSnapshots(before, full, 10));
    expect(diffWorkdirSnapshots(before, after, 10).items).toHaveLength(3);
    // A scan after the after-scan derives from it, not from the peeks' base.
    appendFileSync(at("d/a.txt"), "more");
    const next = (await scan(scans.scan)) as DerivedScan;
    expect(next.derivedFrom?.base).toBe(after);
  });
});
