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
import {
  Errno,
  O_CLOEXEC,
  O_DIRECTORY,
  O_NOFOLLOW,
  O_RDONLY,
  RENAME_NOREPLACE,
} from "../workspace/syscalls.ts";
import { CHECKPOINTS_DIR, type CheckpointStore } from "./checkpoint-store.ts";
import { finishDirectory, type TreeStats } from "./copy-tree.ts";
import { removeTree } from "./remove-tree.ts";

/**
 * The steps of a restore, in order; a test may stop the process at any of them
 * (`onStep`), and the next start must find the Workdir either old or restored. `clearing`
 * and `filling` fire after the first entry moved, so a stop lands mid-phase.
 */
export const RESTORE_STEPS = [
  "planned",
  "staged",
  "ready",
  "clearing",
  "cleared",
  "filling",
  "filled",
  "finished",
  "cleaned",
] as const;
export type RestoreStep = (typeof RESTORE_STEPS)[number];

/** Hidden siblings of the Workdir: the checkpoint's copy, and where the old entries go. */
export const STAGING_PREFIX = ".workcell-restore-";
const TRASH_SUFFIX = "-old";

/** How many names one pass moves; the directory is listed again until it is empty. */
const NAMES_PER_PASS = 4096;

const journalSchema = z.object({
  restore_id: z.uuid(),
  uid: z.string().min(1),
  workdir_path: z.string().min(1),
  checkpoint_id: z.uuid(),
  phase: z.enum(["staging", "clearing", "filling"]),
  root: z.object({ mode: z.string(), atime_ns: z.string(), mtime_ns: z.string() }).optional(),
});
type Journal = z.output<typeof journalSchema>;

export type RestoreOutcome = "completed" | "rolled_back";

type Plan = { restoreId: string; uid: string; workdirPath: string; checkpointId: string };

/**
 * Makes the Workdir exactly checkpoint `checkpointId`, crash-safe (docs/decisions/0152),
 * keeping the Workdir directory itself (its inode: a sandbox that binds the Workdir on its
 * own, the `workdir` file view, keeps seeing it):
 * 1. the plan is written (a journal in the store, fsync'd) before anything is touched;
 * 2. the checkpoint is copied into a hidden, agent-host-owned (0700) sibling of the Workdir
 *    (same directory: same filesystem and quota project, so reflinks and renames work);
 *    a crash before the journal says `clearing` is rolled back (the copy is removed);
 * 3. `clearing`: every entry of the Workdir is renamed into a second hidden sibling (the
 *    trash), then `filling`: every entry of the copy is renamed into the Workdir. Both are
 *    renames of names only: nothing of the old tree is opened, written or followed (a
 *    symlink or hard link the agent planted is only moved, then unlinked);
 * 4. the Workdir gets the checkpoint root's mode and times; the trash is removed; the
 *    journal is dropped.
 * From `clearing` on, recoverRestores() rolls forward: in `clearing` everything still in
 * the Workdir is old, in `filling` everything in it is restored, so finishing the phase
 * and the next is always possible and always ends at the restored tree, never a mix.
 */
export async function restoreWorkdir(
  store: CheckpointStore,
  plan: Plan,
  signal: AbortSignal,
  onStep: (step: RestoreStep) => void = () => {},
): Promise<TreeStats> {
  const journal: Journal = {
    restore_id: plan.restoreId,
    uid: plan.uid,
    workdir_path: plan.workdirPath,
    checkpoint_id: plan.checkpointId,
    phase: "staging",
  };
  writeJournal(store, journal);
  onStep("planned");
  const { sys } = store.deps;
  const parent = store.openWorkdirParent(plan.uid, plan.workdirPath);
  const staging = STAGING_PREFIX + plan.restoreId;
  let forward = false;
  try {
    for (const name of [staging, staging + TRASH_SUFFIX]) {
      const made = sys.mkdirat(parent.fd, name, 0o700);
      if (!made.ok) throw errnoError(made.errno, { op: "restore", path: name });
    }
    const stats = await withDir(store, parent.fd, staging, (fd) =>
      store.copyOut(plan.uid, plan.checkpointId, fd, true, signal),
    );
    onStep("staged");
    const root = checkpointRootStat(store, plan.uid, plan.checkpointId);
    // Opened before the point of no return: a Workdir that is not a real directory (a
    // symlink the agent put there) fails here and the restore is rolled back.
    sys.close(openDir(store, parent.fd, parent.name));
    writeJournal(store, { ...journal, phase: "clearing", root });
    forward = true;
    onStep("ready");
    rollForward(store, parent.fd, parent.name, { ...journal, phase: "clearing", root }, onStep);
    return stats;
  } catch (err) {
    // Before `clearing` the Workdir is untouched: roll back now rather than at next start.
    if (!forward) recoverOne(store, journal);
    throw err;
  } finally {
    sys.close(parent.fd);
  }
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
    removeTree(sys, parent.fd, staging, store.deps.maxDepth + 2);
    removeTree(sys, parent.fd, staging + TRASH_SUFFIX, store.deps.maxDepth + 2);
    dropJournal(store, journal.uid, journal.restore_id);
    return "rolled_back";
  } finally {
    sys.close(parent.fd);
  }
}

/** `clearing` (if the journal says so), `filling`, the root's metadata, the cleanup. */
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
  withDirSync(store, parentFd, name, (workdir) => {
    if (journal.phase === "clearing") {
      withDirSync(store, parentFd, trash, (trashFd) =>
        moveAll(store, workdir, trashFd, () => onStep("clearing")),
      );
      onStep("cleared");
      writeJournal(store, { ...journal, phase: "filling" });
    }
    // Gone only once everything was moved and the cleanup ran (a repeat after a crash).
    if (exists(store, parentFd, staging)) {
      withDirSync(store, parentFd, staging, (stagingFd) =>
        moveAll(store, stagingFd, workdir, () => onStep("filling")),
      );
    }
    onStep("filled");
    if (journal.root !== undefined) {
      const st = fstatSync(workdir, { bigint: true });
      finishDirectory(store.deps, workdir, {
        ...st,
        mode: BigInt(journal.root.mode),
        atimeNs: BigInt(journal.root.atime_ns),
        mtimeNs: BigInt(journal.root.mtime_ns),
      } as typeof st);
    }
  });
  onStep("finished");
  removeTree(sys, parentFd, staging, store.deps.maxDepth + 2);
  removeTree(sys, parentFd, trash, store.deps.maxDepth + 2);
  onStep("cleaned");
  dropJournal(store, journal.uid, journal.restore_id);
}

function exists(store: CheckpointStore, parentFd: number, name: string): boolean {
  const st = store.deps.sys.lstatAt(parentFd, name);
  if (st.ok) return true;
  if (st.errno === Errno.ENOENT) return false;
  throw errnoError(st.errno, { op: "restore", path: name });
}

/** Renames every entry of `fromFd` into `toFd` (no-replace), calling `afterFirst` once. */
function moveAll(
  store: CheckpointStore,
  fromFd: number,
  toFd: number,
  afterFirst: () => void,
): void {
  const { sys } = store.deps;
  let moved = 0;
  for (;;) {
    const listed = sys.readdirAt(fromFd, NAMES_PER_PASS);
    if (!listed.ok) throw errnoError(listed.errno, { op: "restore", path: "" });
    if (listed.value.names.length === 0) return;
    for (const entry of listed.value.names) {
      const renamed = sys.renameat2(fromFd, entry, toFd, entry, RENAME_NOREPLACE);
      if (!renamed.ok && renamed.errno !== Errno.ENOENT) {
        throw errnoError(renamed.errno, { op: "restore", path: entry.toString() });
      }
      if (++moved === 1) afterFirst();
    }
  }
}

function checkpointRootStat(store: CheckpointStore, uid: string, checkpointId: string) {
  const userDir = store.openUserDir(uid);
  try {
    return withDirSync(store, userDir, checkpointId, (fd) => {
      const st = fstatSync(fd, { bigint: true });
      return {
        mode: String(st.mode),
        atime_ns: String(st.atimeNs),
        mtime_ns: String(st.mtimeNs),
      };
    });
  } finally {
    store.deps.sys.close(userDir);
  }
}

function openDir(store: CheckpointStore, parentFd: number, name: string): number {
  const opened = store.deps.sys.openat(
    parentFd,
    name,
    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC,
  );
  if (!opened.ok) throw errnoError(opened.errno, { op: "restore", path: name });
  return opened.value;
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
  name: string,
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
