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
import { RENAME_EXCHANGE } from "./checkpoint-syscalls.ts";
import { finishDirectory, type TreeStats } from "./copy-tree.ts";
import { removeTree } from "./remove-tree.ts";

/**
 * The steps of a restore, in order; a test may stop the process at any of them
 * (`onStep`), and the next start must find the Workdir either old or restored.
 */
export const RESTORE_STEPS = [
  "planned",
  "staged",
  "ready",
  "exchanged",
  "finished",
  "cleaned",
] as const;
export type RestoreStep = (typeof RESTORE_STEPS)[number];

/** Hidden sibling of the Workdir that the checkpoint is copied into before the swap. */
export const STAGING_PREFIX = ".workcell-restore-";

const journalSchema = z.object({
  restore_id: z.uuid(),
  uid: z.string().min(1),
  workdir_path: z.string().min(1),
  checkpoint_id: z.uuid(),
  phase: z.enum(["staging", "ready"]),
  staging_ino: z.string().optional(),
  root: z.object({ mode: z.string(), atime_ns: z.string(), mtime_ns: z.string() }).optional(),
});
type Journal = z.output<typeof journalSchema>;

export type RestoreOutcome = "completed" | "rolled_back";

/**
 * Makes the Workdir exactly checkpoint `checkpointId`, crash-safe (docs/decisions/0152):
 * 1. the plan is written (a journal in the store, fsync'd) before anything is touched;
 * 2. the checkpoint is copied into a hidden, agent-host-owned (0700) sibling of the Workdir
 *    (same directory, so same filesystem and quota project: reflinks and the swap work);
 * 3. the journal records the staging directory's inode, then one renameat2(RENAME_EXCHANGE)
 *    swaps it with the Workdir: the Workdir is the old tree before and the restored one
 *    after, never a mix, and nothing of the old tree is written, opened for writing or
 *    followed (a symlink or hard link the agent planted is only ever unlinked);
 * 4. the new root gets the checkpoint root's owner, mode and times; the old tree (now at
 *    the staging name) is removed; the journal is dropped.
 * recoverRestores() completes (the swap happened: the inode at the Workdir's name is the
 * staging one) or rolls back (it did not: the staging copy is removed) each journal left.
 */
export async function restoreWorkdir(
  store: CheckpointStore,
  plan: { restoreId: string; uid: string; workdirPath: string; checkpointId: string },
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
  try {
    const made = sys.mkdirat(parent.fd, staging, 0o700);
    if (!made.ok) throw errnoError(made.errno, { op: "restore", path: staging });
    const stagingFd = openDir(store, parent.fd, staging);
    let stats: TreeStats;
    let stagingIno: bigint;
    try {
      stats = await store.copyOut(plan.uid, plan.checkpointId, stagingFd, true, signal);
      stagingIno = fstatSync(stagingFd, { bigint: true }).ino;
    } finally {
      sys.close(stagingFd);
    }
    onStep("staged");
    const root = checkpointRootStat(store, plan.uid, plan.checkpointId);
    writeJournal(store, { ...journal, phase: "ready", staging_ino: String(stagingIno), root });
    onStep("ready");
    swap(store, parent.fd, staging, parent.name);
    onStep("exchanged");
    finishRoot(store, parent.fd, parent.name, stagingIno, root);
    onStep("finished");
    removeTree(sys, parent.fd, staging, store.deps.maxDepth + 2);
    onStep("cleaned");
    dropJournal(store, plan.uid, plan.restoreId);
    return stats;
  } catch (err) {
    // Before the swap the Workdir is untouched: roll back now rather than at next start.
    recoverOne(store, readJournal(store, plan.uid, plan.restoreId) ?? journal);
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
    const at = sys.lstatAt(parent.fd, parent.name);
    const swapped =
      journal.phase === "ready" &&
      at.ok &&
      BigInt(at.value.ino) === BigInt(journal.staging_ino ?? -1);
    if (swapped && journal.root !== undefined && journal.staging_ino !== undefined) {
      finishRoot(store, parent.fd, parent.name, BigInt(journal.staging_ino), journal.root);
    }
    removeTree(sys, parent.fd, staging, store.deps.maxDepth + 2);
    dropJournal(store, journal.uid, journal.restore_id);
    return swapped ? "completed" : "rolled_back";
  } finally {
    sys.close(parent.fd);
  }
}

function swap(store: CheckpointStore, parentFd: number, staging: string, name: string): void {
  const { sys } = store.deps;
  const exchanged = sys.renameat2(parentFd, staging, parentFd, name, RENAME_EXCHANGE);
  if (exchanged.ok) return;
  if (exchanged.errno !== Errno.ENOENT)
    throw errnoError(exchanged.errno, { op: "restore", path: name });
  // The Workdir itself was removed: the restored tree takes its name.
  const renamed = sys.renameat2(parentFd, staging, parentFd, name, RENAME_NOREPLACE);
  if (!renamed.ok) throw errnoError(renamed.errno, { op: "restore", path: name });
}

function finishRoot(
  store: CheckpointStore,
  parentFd: number,
  name: string,
  stagingIno: bigint,
  root: NonNullable<Journal["root"]>,
): void {
  const fd = openDir(store, parentFd, name);
  try {
    const st = fstatSync(fd, { bigint: true });
    if (st.ino !== stagingIno) return; // not ours: never chmod what the agent put there
    finishDirectory(store.deps, fd, {
      ...st,
      mode: BigInt(root.mode),
      atimeNs: BigInt(root.atime_ns),
      mtimeNs: BigInt(root.mtime_ns),
    } as typeof st);
  } finally {
    store.deps.sys.close(fd);
  }
}

function checkpointRootStat(store: CheckpointStore, uid: string, checkpointId: string) {
  const userDir = store.openUserDir(uid);
  try {
    const fd = openDir(store, userDir, checkpointId);
    try {
      const st = fstatSync(fd, { bigint: true });
      return { mode: String(st.mode), atime_ns: String(st.atimeNs), mtime_ns: String(st.mtimeNs) };
    } finally {
      store.deps.sys.close(fd);
    }
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

function readJournal(store: CheckpointStore, uid: string, restoreId: string): Journal | undefined {
  try {
    return journalSchema.parse(
      JSON.parse(readFileSync(journalPath(store, uid, restoreId), "utf8")),
    );
  } catch {
    return undefined;
  }
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
