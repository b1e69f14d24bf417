import {
  closeSync,
  fstatSync,
  fsyncSync,
  openSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeSync,
} from "node:fs";
import { join } from "node:path";
import { z } from "zod";
import { uidDirname } from "../../shared/paths/index.ts";
import { errnoError } from "../workspace/errno-error.ts";
import { Errno } from "../workspace/syscalls.ts";
import { CHECKPOINTS_DIR, type CheckpointStore } from "./checkpoint-store.ts";
import { copyEntry, emptyTreeStats, type TreeStats } from "./copy-tree.ts";
import { removeTree } from "./remove-tree.ts";
import { diffTrees, type RestoreDiff } from "./restore-diff.ts";
import { moveAll, moveEntry, openDir, openParent, refinish } from "./restore-moves.ts";

/**
 * The steps of a restore, in order; a test may stop the process at any of them
 * (`onStep`), and the next start must find the Workdir either old or restored. `clearing`,
 * `filling` and `refinishing` fire after the first entry of their phase, so a stop lands
 * mid-phase.
 */
export const RESTORE_STEPS = [
  "planned",
  "staged",
  "ready",
  "clearing",
  "cleared",
  "filling",
  "filled",
  "refinishing",
  "finished",
  "cleaned",
] as const;
export type RestoreStep = (typeof RESTORE_STEPS)[number];

/** Hidden siblings of the Workdir: what is copied in, and where what goes out is moved. */
export const STAGING_PREFIX = ".workcell-restore-";
const TRASH_SUFFIX = "-old";

const entryPath = z.array(z.string().regex(/^([0-9a-f]{2})+$/));
const rootMeta = z.object({ mode: z.string(), atime_ns: z.string(), mtime_ns: z.string() });
const journalSchema = z.object({
  restore_id: z.uuid(),
  uid: z.string().min(1),
  workdir_path: z.string().min(1),
  checkpoint_id: z.uuid(),
  phase: z.enum(["staging", "clearing", "filling"]),
  diff: z
    .object({
      remove: z.array(entryPath),
      put: z.array(entryPath),
      dirs: z.array(
        z.object({ path: entryPath, mode: z.string(), atime_ns: z.string(), mtime_ns: z.string() }),
      ),
    })
    .optional(),
  /** The first build's journals: the checkpoint root's metadata (the diff's dirs now). */
  root: rootMeta.optional(),
  /**
   * Where the staging and trash directories are: beside the Workdir (absent: the first
   * journals), or inside it when the Workdir is a btrfs subvolume, since a rename cannot
   * cross a subvolume's edge (docs/decisions/0190). Then `workdir_root` keeps the Workdir's
   * own metadata from before, which a rollback gives back.
   */
  staging_in: z.enum(["parent", "workdir"]).optional(),
  workdir_root: rootMeta.optional(),
});
type Journal = z.output<typeof journalSchema>;

export type RestoreOutcome = "completed" | "rolled_back";

type Plan = { restoreId: string; uid: string; workdirPath: string; checkpointId: string };

/**
 * Makes the Workdir exactly checkpoint `checkpointId`, touching only what differs,
 * crash-safe (docs/decisions/0152, 0155), keeping the Workdir directory itself (its inode:
 * a sandbox that binds the Workdir on its own, the `workdir` file view, keeps seeing it):
 * 1. the plan is written (a journal in the store, fsync'd) before anything is touched;
 * 2. the difference is found by comparing the two trees (restore-diff.ts) and what the
 *    checkpoint holds of it is copied into a hidden, agent-host-owned (0700) sibling of the
 *    Workdir (same directory: same filesystem and quota project, so reflinks and renames
 *    work), one numbered entry per path; a crash before the journal says `clearing` (with
 *    the difference in it) is rolled back (the copy is removed);
 * 3. `clearing`: every Workdir entry to go is renamed into a second hidden sibling (the
 *    trash), then `filling`: every staged entry is renamed to its place. Both are renames
 *    of names inside directories opened O_NOFOLLOW: nothing of the old tree is opened,
 *    written or followed (a symlink or hard link the agent planted is only moved, then
 *    unlinked); entries that did not change are not touched at all;
 * 4. the directories that changed get the checkpoint's mode and times, deepest first; the
 *    trash is removed; the journal is dropped.
 * From `clearing` on, recoverRestores() rolls forward: each move is a rename whose source
 * is gone once done, so repeating the phase finishes it, and the end is always the
 * restored tree, never a mix.
 */
export async function restoreWorkdir(
  store: CheckpointStore,
  plan: Plan,
  signal: AbortSignal,
  onStep: (step: RestoreStep) => void = () => {},
): Promise<TreeStats> {
  const { sys } = store.deps;
  const parent = store.openWorkdirParent(plan.uid, plan.workdirPath);
  try {
    const journal: Journal = {
      restore_id: plan.restoreId,
      uid: plan.uid,
      workdir_path: plan.workdirPath,
      checkpoint_id: plan.checkpointId,
      phase: "staging",
      // Opened O_NOFOLLOW: a Workdir that is not a real directory (a symlink the agent put
      // there) fails here, before anything is written.
      ...withDirSync(store, parent.fd, parent.name, (workdir) => stagingPlace(store, workdir)),
    };
    writeJournal(store, journal);
    onStep("planned");
    const staging = STAGING_PREFIX + plan.restoreId;
    let forward = false;
    try {
      const { diff, stats } = await withDir(store, parent.fd, parent.name, (workdir) =>
        withCheckpoint(store, plan, (checkpoint) => {
          // Found before the hidden directories exist, which may be inside the Workdir.
          const diff = diffTrees(
            { ...store.deps, sameInodes: isSnapshot(store, checkpoint) },
            checkpoint,
            workdir,
          );
          const holder = journal.staging_in === "workdir" ? workdir : parent.fd;
          for (const name of [staging, staging + TRASH_SUFFIX]) {
            const made = sys.mkdirat(holder, name, 0o700);
            if (!made.ok) throw errnoError(made.errno, { op: "restore", path: name });
          }
          return withDir(store, holder, staging, (stagingFd) =>
            stageDiff(store, checkpoint, diff, stagingFd, signal),
          );
        }),
      );
      onStep("staged");
      const ready: Journal = { ...journal, phase: "clearing", diff };
      writeJournal(store, ready);
      forward = true;
      onStep("ready");
      rollForward(store, parent.fd, parent.name, ready, onStep);
      return stats;
    } catch (err) {
      // Before `clearing` the Workdir is untouched: roll back now rather than at next start.
      if (!forward) recoverOne(store, journal);
      throw err;
    }
  } finally {
    sys.close(parent.fd);
  }
}

/** Inside a Workdir that is a subvolume (with its metadata for a rollback), else beside it. */
function stagingPlace(store: CheckpointStore, workdir: number): Partial<Journal> {
  if (store.deps.subvolumes?.isSubvolume(workdir) !== true) return {};
  const st = fstatSync(workdir, { bigint: true });
  return {
    staging_in: "workdir",
    workdir_root: {
      mode: String(st.mode),
      atime_ns: String(st.atimeNs),
      mtime_ns: String(st.mtimeNs),
    },
  };
}

/** A snapshot shares its inodes with the Workdir it was taken of (restore-diff's sameInodes). */
function isSnapshot(store: CheckpointStore, checkpoint: number): boolean {
  return store.deps.subvolumes?.isSubvolume(checkpoint) === true;
}

/** The difference, and a copy of what the checkpoint holds of it (entries `0`, `1`, …). */
async function stageDiff(
  store: CheckpointStore,
  checkpoint: number,
  diff: RestoreDiff,
  stagingFd: number,
  signal: AbortSignal,
): Promise<{ diff: RestoreDiff; stats: TreeStats }> {
  const stats = emptyTreeStats();
  for (const [i, path] of diff.put.entries()) {
    signal.throwIfAborted();
    const { fd, name } = openParent(store, checkpoint, path);
    try {
      const copied = await copyEntry(
        store.deps,
        fd,
        name,
        stagingFd,
        Buffer.from(String(i)),
        store.deps.mode,
        signal,
      );
      stats.files += copied.files;
      stats.dirs += copied.dirs;
      stats.bytes += copied.bytes;
      stats.skipped += copied.skipped;
    } finally {
      if (fd !== checkpoint) store.deps.sys.close(fd);
    }
  }
  return { diff, stats };
}

/** Completes or rolls back every restore a crash interrupted on this data root. */
export function recoverRestores(store: CheckpointStore): Map<string, RestoreOutcome> {
  const outcomes = new Map<string, RestoreOutcome>();
  const storeDir = join(store.deps.dataRoot, CHECKPOINTS_DIR);
  for (const dirname of safeReaddir(storeDir)) {
    for (const name of safeReaddir(join(storeDir, dirname))) {
      if (!name.startsWith("restore-") || !name.endsWith(".json")) continue;
      const parsed = journalSchema.safeParse(
        JSON.parse(readFileSync(join(storeDir, dirname, name), "utf8")),
      );
      if (!parsed.success) continue;
      outcomes.set(parsed.data.restore_id, recoverOne(store, parsed.data));
    }
  }
  return outcomes;
}

function recoverOne(store: CheckpointStore, journal: Journal): RestoreOutcome {
  const { sys } = store.deps;
  const staging = STAGING_PREFIX + journal.restore_id;
  const parent = store.openWorkdirParent(journal.uid, journal.workdir_path);
  try {
    if (journal.phase !== "staging") {
      rollForward(store, parent.fd, parent.name, journal, () => {});
      return "completed";
    }
    withHolder(store, parent, journal, (holder, workdir) => {
      removeTree(sys, holder, staging, store.deps.maxDepth + 2);
      removeTree(sys, holder, staging + TRASH_SUFFIX, store.deps.maxDepth + 2);
      if (workdir !== undefined && journal.workdir_root !== undefined) {
        refinish(store, workdir, { path: [], ...journal.workdir_root });
      }
    });
    dropJournal(store, journal.uid, journal.restore_id);
    return "rolled_back";
  } finally {
    sys.close(parent.fd);
  }
}

/**
 * Runs `fn` with the directory that holds the staging and trash directories, and the
 * Workdir's descriptor when that is the Workdir itself.
 */
function withHolder<T>(
  store: CheckpointStore,
  parent: { fd: number; name: string },
  journal: Journal,
  fn: (holder: number, workdir: number | undefined) => T,
): T {
  if (journal.staging_in !== "workdir") return fn(parent.fd, undefined);
  return withDirSync(store, parent.fd, parent.name, (workdir) => fn(workdir, workdir));
}

/** `clearing` (if the journal says so), `filling`, the directories, the cleanup. */
function rollForward(
  store: CheckpointStore,
  parentFd: number,
  name: string,
  journal: Journal,
  onStep: (step: RestoreStep) => void,
): void {
  const { sys } = store.deps;
  const staging = STAGING_PREFIX + journal.restore_id;
  const trash = staging + TRASH_SUFFIX;
  const diff = journal.diff ?? { remove: [], put: [], dirs: [] };
  // A journal of the first build (no `diff`) staged the whole checkpoint: all moves.
  const whole = journal.diff === undefined;
  withDirSync(store, parentFd, name, (workdir) => {
    const holder = journal.staging_in === "workdir" ? workdir : parentFd;
    if (journal.phase === "clearing") {
      withDirSync(store, holder, trash, (trashFd) => {
        if (whole) moveAll(store, workdir, trashFd);
        diff.remove.forEach((path, i) => {
          moveEntry(store, workdir, path, trashFd, [String(i)], "out");
          if (i === 0) onStep("clearing");
        });
      });
      onStep("cleared");
      writeJournal(store, { ...journal, phase: "filling" });
    }
    // Gone only once everything was moved and the cleanup ran (a repeat after a crash).
    if (exists(store, holder, staging)) {
      withDirSync(store, holder, staging, (stagingFd) => {
        if (whole) moveAll(store, stagingFd, workdir);
        diff.put.forEach((path, i) => {
          moveEntry(store, stagingFd, [String(i)], workdir, path, "in");
          if (i === 0) onStep("filling");
        });
      });
    }
    onStep("filled");
    if (whole && journal.root !== undefined)
      refinish(store, workdir, { path: [], ...journal.root });
    diff.dirs.forEach((dir, i) => {
      refinish(store, workdir, dir);
      if (i === 0) onStep("refinishing");
    });
    onStep("finished");
    removeTree(sys, holder, staging, store.deps.maxDepth + 2);
    removeTree(sys, holder, trash, store.deps.maxDepth + 2);
    // Removing them inside the Workdir changed its times again: the checkpoint's, once more.
    const root = diff.dirs.find((dir) => dir.path.length === 0);
    if (holder === workdir && root !== undefined) refinish(store, workdir, root);
  });
  onStep("cleaned");
  dropJournal(store, journal.uid, journal.restore_id);
}

function exists(store: CheckpointStore, parentFd: number, name: string): boolean {
  const st = store.deps.sys.lstatAt(parentFd, name);
  if (st.ok) return true;
  if (st.errno === Errno.ENOENT) return false;
  throw errnoError(st.errno, { op: "restore", path: name });
}

async function withCheckpoint<T>(
  store: CheckpointStore,
  plan: Plan,
  fn: (fd: number) => Promise<T>,
): Promise<T> {
  const userDir = store.openUserDir(plan.uid);
  try {
    return await withDir(store, userDir, plan.checkpointId, fn);
  } finally {
    store.deps.sys.close(userDir);
  }
}

function withDirSync<T>(
  store: CheckpointStore,
  parentFd: number,
  name: string,
  fn: (fd: number) => T,
): T {
  const fd = openDir(store, parentFd, name);
  try {
    return fn(fd);
  } finally {
    store.deps.sys.close(fd);
  }
}

async function withDir<T>(
  store: CheckpointStore,
  parentFd: number,
  name: string | Buffer,
  fn: (fd: number) => Promise<T>,
): Promise<T> {
  const fd = openDir(store, parentFd, name);
  try {
    return await fn(fd);
  } finally {
    store.deps.sys.close(fd);
  }
}

// The journal lives in the store (`checkpoints/<uid dirname>/`, agent-host-owned 0700, no
// sandbox or file API reaches it), so plain paths below the trusted data root are safe.
function journalPath(store: CheckpointStore, uid: string, restoreId: string): string {
  return join(store.deps.dataRoot, CHECKPOINTS_DIR, uidDirname(uid), `restore-${restoreId}.json`);
}

function writeJournal(store: CheckpointStore, journal: Journal): void {
  store.deps.sys.close(store.openUserDir(journal.uid));
  const path = journalPath(store, journal.uid, journal.restore_id);
  const temp = `${path}.tmp`;
  const fd = openSync(temp, "w", 0o600);
  try {
    writeSync(fd, JSON.stringify(journal));
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(temp, path);
}

function dropJournal(store: CheckpointStore, uid: string, restoreId: string): void {
  rmSync(journalPath(store, uid, restoreId), { force: true });
}

function safeReaddir(path: string): string[] {
  try {
    return readdirSync(path);
  } catch {
    return [];
  }
}
