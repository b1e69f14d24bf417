import { fstatSync } from "node:fs";
import { errnoError } from "../workspace/errno-error.ts";
import {
  Errno,
  O_CLOEXEC,
  O_DIRECTORY,
  O_NOFOLLOW,
  O_RDONLY,
  RENAME_NOREPLACE,
} from "../workspace/syscalls.ts";
import type { CheckpointStore } from "./checkpoint-store.ts";
import { finishDirectory } from "./copy-tree.ts";
import type { DirFinish } from "./restore-diff.ts";

// The moves of a restore (restore-workdir.ts): each entry reached through directories
// opened O_NOFOLLOW below a held descriptor, never by a path the agent could redirect.

export function openDir(store: CheckpointStore, parentFd: number, name: string | Buffer): number {
  const opened = store.deps.sys.openat(
    parentFd,
    name,
    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC,
  );
  if (!opened.ok) throw errnoError(opened.errno, { op: "restore", path: name.toString() });
  return opened.value;
}

/**
 * Renames one entry (no-replace) between the Workdir and a hidden sibling; the Workdir side
 * is reached through its directories opened O_NOFOLLOW. A source already gone was moved
 * before a crash.
 */
export function moveEntry(
  store: CheckpointStore,
  fromRoot: number,
  from: string[],
  toRoot: number,
  to: string[],
  direction: "out" | "in",
): void {
  const src = direction === "out" ? openParent(store, fromRoot, from) : plainName(fromRoot, from);
  try {
    const dst = direction === "in" ? openParent(store, toRoot, to) : plainName(toRoot, to);
    try {
      const renamed = store.deps.sys.renameat2(
        src.fd,
        src.name,
        dst.fd,
        dst.name,
        RENAME_NOREPLACE,
      );
      if (!renamed.ok && renamed.errno !== Errno.ENOENT) {
        throw errnoError(renamed.errno, { op: "restore", path: printable(to) });
      }
    } finally {
      if (dst.fd !== toRoot) store.deps.sys.close(dst.fd);
    }
  } finally {
    if (src.fd !== fromRoot) store.deps.sys.close(src.fd);
  }
}

function plainName(fd: number, names: string[]): { fd: number; name: Buffer } {
  return { fd, name: Buffer.from(names[0] as string) };
}

/**
 * The directory holding `path` (hex names) below `rootFd`, each level opened O_NOFOLLOW,
 * and the last name; the descriptor is `rootFd` itself for a top-level entry.
 */
export function openParent(
  store: CheckpointStore,
  rootFd: number,
  path: string[],
): { fd: number; name: Buffer } {
  let fd = rootFd;
  try {
    for (const hex of path.slice(0, -1)) {
      const next = openDir(store, fd, Buffer.from(hex, "hex"));
      if (fd !== rootFd) store.deps.sys.close(fd);
      fd = next;
    }
  } catch (err) {
    if (fd !== rootFd) store.deps.sys.close(fd);
    throw err;
  }
  return { fd, name: Buffer.from(path[path.length - 1] as string, "hex") };
}

/** Gives a directory of both trees the checkpoint's mode and times (the root: path []). */
export function refinish(store: CheckpointStore, workdir: number, dir: DirFinish): void {
  const target =
    dir.path.length === 0
      ? { fd: workdir, own: false }
      : (() => {
          const { fd, name } = openParent(store, workdir, dir.path);
          try {
            return { fd: openDir(store, fd, name), own: true };
          } finally {
            if (fd !== workdir) store.deps.sys.close(fd);
          }
        })();
  try {
    const st = fstatSync(target.fd, { bigint: true });
    finishDirectory(store.deps, target.fd, {
      ...st,
      mode: BigInt(dir.mode),
      atimeNs: BigInt(dir.atime_ns),
      mtimeNs: BigInt(dir.mtime_ns),
    } as typeof st);
  } finally {
    if (target.own) store.deps.sys.close(target.fd);
  }
}

function printable(path: string[]): string {
  return path.map((hex) => Buffer.from(hex, "hex").toString("utf8")).join("/");
}

/** How many names one pass moves; the directory is listed again until it is empty. */
const NAMES_PER_PASS = 4096;

/**
 * Renames every entry of `fromFd` into `toFd` (no-replace): how the first build's restores
 * moved whole trees, kept to finish a journal of that build after an upgrade.
 */
export function moveAll(store: CheckpointStore, fromFd: number, toFd: number): void {
  const { sys } = store.deps;
  for (;;) {
    const listed = sys.readdirAt(fromFd, NAMES_PER_PASS);
    if (!listed.ok) throw errnoError(listed.errno, { op: "restore", path: "" });
    if (listed.value.names.length === 0) return;
    for (const entry of listed.value.names) {
      const renamed = sys.renameat2(fromFd, entry, toFd, entry, RENAME_NOREPLACE);
      if (!renamed.ok && renamed.errno !== Errno.ENOENT) {
        throw errnoError(renamed.errno, { op: "restore", path: entry.toString() });
      }
    }
  }
}
