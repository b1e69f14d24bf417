import { join } from "node:path";
import {
  AT_FDCWD,
  type FsSyscalls,
  O_CLOEXEC,
  O_DIRECTORY,
  O_RDONLY,
} from "../workspace/syscalls.ts";
import { PROJECTIONS_DIR, SKILLS_DIR } from "./skill-fs.ts";

/** More uids than one node serves between two restarts; the oldest is forgotten first. */
export const DEFAULT_MAX_KNOWN_PROJECTIONS = 10_000;

/**
 * What this process's last fully `ok` refresh of each uid left (docs/decisions/0075): the
 * grant version it read under the uid's grant lock, the slugs it projected and the
 * projection root's inode and times. A run whose freshly read grant version equals the
 * remembered one, and whose projection root was not touched since, needs no refresh: no
 * grant, and no granted skill's source, changed since that refresh read them.
 *
 * `remember` and `forget` are called holding the projection's flock, so the entry always
 * describes the last refresh that held it in this process. A refresh by another process
 * (another agent-host on a shared volume) renames or removes entries of the root, which
 * moves its mtime and ctime: the next run refreshes.
 *
 * Per refresher instance, in memory: a restarted agent-host refreshes each uid once.
 */
export interface KnownProjections {
  /** The projected slugs if nothing changed since the remembered refresh; else undefined. */
  current(uid: string, dirname: string, grantVersion: string): readonly string[] | undefined;
  /** After a fully ok refresh that read `grantVersion` (caller holds the flock). */
  remember(uid: string, dirname: string, grantVersion: string, projected: readonly string[]): void;
  /** Before a refresh, and after any that was not fully ok (caller holds the flock). */
  forget(uid: string): void;
}

interface Entry {
  readonly grantVersion: string;
  readonly projected: readonly string[];
  readonly root: RootStamp;
}

interface RootStamp {
  readonly ino: number;
  readonly mtimeMs: number;
  readonly ctimeMs: number;
}

export function createKnownProjections(deps: {
  readonly sys: FsSyscalls;
  /** The agent-host's data root (operator configuration, trusted). */
  readonly dataRoot: string;
  readonly maxUids?: number;
}): KnownProjections {
  const maxUids = deps.maxUids ?? DEFAULT_MAX_KNOWN_PROJECTIONS;
  const entries = new Map<string, Entry>();

  /**
   * An lstat of the root in the projections directory, opened by path: the data root is
   * trusted, and a mismatch only costs a refresh, which opens everything safely.
   */
  function stampOf(dirname: string): RootStamp | undefined {
    const { sys } = deps;
    const projections = sys.openat(
      AT_FDCWD,
      join(deps.dataRoot, SKILLS_DIR, PROJECTIONS_DIR),
      O_RDONLY | O_DIRECTORY | O_CLOEXEC,
    );
    if (!projections.ok) return undefined;
    try {
      const st = sys.lstatAt(projections.value, dirname);
      if (!st.ok || !st.value.isDirectory()) return undefined;
      return { ino: st.value.ino, mtimeMs: st.value.mtimeMs, ctimeMs: st.value.ctimeMs };
    } finally {
      sys.close(projections.value);
    }
  }

  return {
    current(uid, dirname, grantVersion) {
      const entry = entries.get(uid);
      if (entry === undefined || entry.grantVersion !== grantVersion) return undefined;
      const root = stampOf(dirname);
      if (
        root === undefined ||
        root.ino !== entry.root.ino ||
        root.mtimeMs !== entry.root.mtimeMs ||
        root.ctimeMs !== entry.root.ctimeMs
      ) {
        return undefined;
      }
      return entry.projected;
    },
    remember(uid, dirname, grantVersion, projected) {
      entries.delete(uid);
      const root = stampOf(dirname);
      if (root === undefined) return;
      entries.set(uid, { grantVersion, projected: [...projected], root });
      if (entries.size > maxUids) {
        const oldest = entries.keys().next();
        if (oldest.done !== true) entries.delete(oldest.value);
      }
    },
    forget(uid) {
      entries.delete(uid);
    },
  };
}
