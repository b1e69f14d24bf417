import { createHash } from "node:crypto";
import type { Stats } from "node:fs";
import { domainError } from "../../shared/errors/index.ts";
import { entryKindOf } from "../workspace/entry-kind.ts";
import {
  Errno,
  type FsSyscalls,
  O_CLOEXEC,
  O_DIRECTORY,
  O_NOFOLLOW,
  O_PATH,
  RESOLVE_BENEATH,
  RESOLVE_NO_MAGICLINKS,
  RESOLVE_NO_SYMLINKS,
} from "../workspace/syscalls.ts";

/**
 * The fingerprint of a source tree's directories: for the root and every subdirectory its
 * path, inode, mode, mtime and ctime. The safe copy computes it from the descriptors it
 * opens; a no-op refresh recomputes it from the directory list the copy recorded, which
 * costs one open and one fstat per directory and reads no file at all.
 *
 * Why directories are enough: adding, removing or renaming anything in a directory moves
 * that directory's mtime and ctime (no unprivileged caller can set a ctime back), so a
 * symlink, FIFO, socket or device planted anywhere in the source, a file replaced by
 * rename, or a new subdirectory all change the fingerprint, and the refresh then copies
 * again, which refuses special files and checks the content hash. What it does not see
 * is a regular file rewritten in place; that is harmless here: the projection still holds
 * the bytes that were verified against the catalogue's hash when they were copied, and
 * the next copy of the altered source fails that check (fail closed).
 */
export class DirectoryFingerprint {
  readonly #records: { readonly path: Buffer; readonly line: Buffer }[] = [];
  readonly #root: string;

  constructor(root: Stats) {
    this.#root = recordLine(root);
  }

  add(path: Buffer, st: Stats): void {
    this.#records.push({
      path,
      line: Buffer.concat([Buffer.from(`${path.byteLength}:`), path, Buffer.from(recordLine(st))]),
    });
  }

  /** The directories' relative paths, base64 (names need not be UTF-8), for the state file. */
  paths(): string[] {
    return this.#records.map((record) => record.path.toString("base64"));
  }

  digest(): string {
    const hash = createHash("sha256").update(`root${this.#root}`);
    for (const record of [...this.#records].sort((a, b) => Buffer.compare(a.path, b.path))) {
      hash.update(record.line);
    }
    return hash.digest("hex");
  }
}

function recordLine(st: Stats): string {
  return ` ${st.dev} ${st.ino} ${st.mode} ${st.mtimeMs} ${st.ctimeMs}\n`;
}

/** openat2 resolution for re-opening a recorded directory: below the root, no link at all. */
const BENEATH_NO_LINKS = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;

/**
 * Recomputes the fingerprint of `paths` (as recorded by the copy) below `rootFd`; undefined
 * when one of them is no longer a real directory reachable without a symlink (the tree
 * changed: the caller copies again, and the copy says what is wrong).
 */
export function fingerprintDirectories(
  sys: FsSyscalls,
  rootFd: number,
  paths: readonly string[],
): string | undefined {
  const root = sys.fstat(rootFd);
  if (!root.ok) return undefined;
  const builder = new DirectoryFingerprint(root.value);
  for (const encoded of paths) {
    const path = Buffer.from(encoded, "base64");
    const fd = openBeneath(sys, rootFd, path);
    if (fd === undefined) return undefined;
    try {
      const st = sys.fstat(fd);
      if (!st.ok || !st.value.isDirectory()) return undefined;
      builder.add(path, st.value);
    } finally {
      sys.close(fd);
    }
  }
  return builder.digest();
}

function openBeneath(sys: FsSyscalls, rootFd: number, path: Buffer): number | undefined {
  const flags = O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
  // openat2 takes a string path; names that are not UTF-8 take the component walk.
  const text = path.toString("utf8");
  if (Buffer.from(text, "utf8").equals(path)) {
    const opened = sys.openat2(rootFd, text, { flags, mode: 0, resolve: BENEATH_NO_LINKS });
    if (opened.ok) return opened.value;
    if (opened.errno !== Errno.ENOSYS && opened.errno !== Errno.EPERM) return undefined;
  }
  // Component by component, each one no-follow, from the root's descriptor.
  let current = rootFd;
  for (const name of splitPath(path)) {
    const next = sys.openat(current, name, flags);
    if (current !== rootFd) sys.close(current);
    if (!next.ok) return undefined;
    current = next.value;
  }
  return current === rootFd ? undefined : current;
}

function splitPath(path: Buffer): Buffer[] {
  const parts: Buffer[] = [];
  let start = 0;
  for (let i = 0; i <= path.length; i++) {
    if (i === path.length || path[i] === 0x2f) {
      parts.push(path.subarray(start, i));
      start = i + 1;
    }
  }
  return parts;
}

/** Refuses a symlink, FIFO, socket or device found in a skill source. */
export function refuseLinksAndSpecials(st: Stats, path: Buffer): void {
  const kind = entryKindOf(st);
  if (kind === "symlink") {
    throw domainError("symlink_refused", {
      message: `The skill source contains a symbolic link ('${path}'): skills hold only regular files and directories.`,
      details: { path: path.toString() },
    });
  }
  if (kind === "special") {
    throw domainError("special_file_refused", {
      message: `The skill source contains a FIFO, socket or device ('${path}'): skills hold only regular files and directories.`,
      details: { path: path.toString() },
    });
  }
}
