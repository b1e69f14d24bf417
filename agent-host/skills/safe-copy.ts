import { createHash } from "node:crypto";
import { fdatasyncSync, fsyncSync, readSync, writeSync } from "node:fs";
import { performance } from "node:perf_hooks";
import { setImmediate as yieldToLoop } from "node:timers/promises";
import { WorkcellError } from "../../shared/errors/index.ts";
import { entryKindOf } from "../workspace/entry-kind.ts";
import {
  Errno,
  type FsSyscalls,
  O_CLOEXEC,
  O_CREAT,
  O_DIRECTORY,
  O_EXCL,
  O_NOCTTY,
  O_NOFOLLOW,
  O_NONBLOCK,
  O_PATH,
  O_RDONLY,
  O_WRONLY,
} from "../workspace/syscalls.ts";
import { ContentHashBuilder, childPath, isExecutableMode } from "./content-hash.ts";
import {
  BUILD_DIR_MODE,
  fstatFd,
  openDirAt,
  SKILL_DIR_MODE,
  SKILL_EXEC_FILE_MODE,
  SKILL_FILE_MODE,
  skillFsError,
} from "./skill-fs.ts";
import { COPY_CHUNK_BYTES, COPY_SLICE_MS, type SkillLimits } from "./skill-limits.ts";
import { DirectoryFingerprint, refuseLinksAndSpecials } from "./source-fingerprint.ts";

export type TreeLimits = Pick<
  SkillLimits,
  "maxEntries" | "maxSkillBytes" | "maxFileBytes" | "maxDepth"
>;

export interface TreeCopyOptions {
  readonly limits: TreeLimits;
  readonly signal: AbortSignal;
  /**
   * Called with each entry's relative path just before it is opened. A tracing hook, and
   * the seam race tests use to swap an entry for a symlink in mid-copy.
   */
  readonly onEntry?: (path: string) => void | Promise<void>;
  /** fdatasync every file and fsync every directory written (the source store must survive a crash). */
  readonly durable?: boolean;
}

export interface TreeCopyResult {
  readonly contentHash: string;
  /** The source's directory fingerprint (source-fingerprint.ts). */
  readonly fingerprint: string;
  /** The directories it covers, for recomputing it later (base64 relative paths). */
  readonly directoryPaths: readonly string[];
  readonly files: number;
  readonly directories: number;
  readonly bytes: number;
}

interface WalkState {
  readonly sys: FsSyscalls;
  readonly options: TreeCopyOptions;
  readonly hash: ContentHashBuilder;
  readonly fingerprint: DirectoryFingerprint;
  readonly chunk: Buffer;
  entries: number;
  files: number;
  directories: number;
  bytes: number;
  sliceStart: number;
  /** Per creation mode: whether files come out of O_CREAT with exactly it (see fixMode). */
  readonly umaskKeeps: Map<number, boolean>;
}

/**
 * The safe copy of docs/architecture.md §6: copies the tree below `srcFd` into the empty
 * directory `destFd`, computing its content hash on the way. Without `destFd` it only
 * hashes (the same walk, so the two can never disagree on what a tree is).
 *
 * Why it is safe against the source:
 * - Every entry is opened relative to its parent's descriptor with O_PATH|O_NOFOLLOW, then
 *   judged by fstat of that descriptor, never by a path: a symlink yields a descriptor of
 *   the link itself and is refused, so a symlink swapped in at any moment is refused, never
 *   followed; there is no check-then-use gap.
 * - O_PATH opens nothing: a FIFO is not waited on, a device's driver is never called. Only
 *   after fstat says "regular file" (or "directory") is the same inode reopened for reading
 *   through /proc/self/fd, which involves no lookup by name.
 * - A symlink, FIFO, socket or device anywhere fails the whole copy (symlink_refused /
 *   special_file_refused). Entries, bytes and depth are bounded.
 *
 * And against the destination: names are created with O_CREAT|O_EXCL|O_NOFOLLOW and
 * mkdirat inside a directory the caller just made, so nothing pre-existing is written
 * through. Files end 0444 (0555 when any exec bit was set), directories 0555; until a
 * directory is complete it stays 0700.
 */
export async function safeCopyTree(
  sys: FsSyscalls,
  srcFd: number,
  destFd: number | undefined,
  options: TreeCopyOptions,
): Promise<TreeCopyResult> {
  const state: WalkState = {
    sys,
    options,
    hash: new ContentHashBuilder(),
    fingerprint: new DirectoryFingerprint(fstatFd(sys, srcFd, ".")),
    chunk: Buffer.allocUnsafe(COPY_CHUNK_BYTES),
    entries: 0,
    files: 0,
    directories: 0,
    bytes: 0,
    sliceStart: performance.now(),
    umaskKeeps: new Map(),
  };
  options.signal.throwIfAborted();
  await copyDirectory(state, srcFd, destFd, undefined, 1);
  if (destFd !== undefined && options.durable) fsyncSync(destFd);
  return {
    contentHash: state.hash.digest(),
    fingerprint: state.fingerprint.digest(),
    directoryPaths: state.fingerprint.paths(),
    files: state.files,
    directories: state.directories,
    bytes: state.bytes,
  };
}

/** The content hash of the tree below `srcFd`, by the same walk as the copy. */
export async function hashSkillTree(
  sys: FsSyscalls,
  srcFd: number,
  options: TreeCopyOptions,
): Promise<TreeCopyResult> {
  return safeCopyTree(sys, srcFd, undefined, options);
}

async function copyDirectory(
  state: WalkState,
  srcFd: number,
  destFd: number | undefined,
  prefix: Buffer | undefined,
  depth: number,
): Promise<void> {
  const { sys, options } = state;
  const { limits } = options;
  const listed = sys.readdirAt(srcFd, limits.maxEntries - state.entries + 1);
  if (!listed.ok) throw skillFsError("readdir", shown(prefix), listed.errno);
  for (const name of listed.value.names) {
    state.entries++;
    if (state.entries > limits.maxEntries) throw tooLarge(prefix, "maxEntries", limits.maxEntries);
    await maybeYield(state);
    const path = childPath(prefix, name);
    await options.onEntry?.(path.toString());
    const handle = sys.openat(srcFd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
    if (!handle.ok) {
      // Listed a moment ago and gone now: the source changed under the copy.
      if (handle.errno === Errno.ENOENT) throw sourceChanged(path);
      throw skillFsError("open", path.toString(), handle.errno);
    }
    let kind: ReturnType<typeof entryKindOf>;
    let mode: number;
    let reopened: number;
    try {
      const st = fstatFd(sys, handle.value, path.toString());
      kind = entryKindOf(st);
      mode = st.mode;
      refuseLinksAndSpecials(st, path);
      if (kind === "dir") state.fingerprint.add(path, st);
      if (kind === "dir" && depth > limits.maxDepth) {
        throw tooLarge(path, "maxDepth", limits.maxDepth);
      }
      if (kind === "file" && st.size > limits.maxFileBytes) {
        throw tooLarge(path, "maxFileBytes", limits.maxFileBytes);
      }
      // Same inode, new access mode, no lookup by name.
      const flags =
        kind === "dir"
          ? O_RDONLY | O_DIRECTORY | O_CLOEXEC
          : O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC;
      const opened = sys.reopen(handle.value, flags);
      if (!opened.ok) throw skillFsError("reopen", path.toString(), opened.errno);
      reopened = opened.value;
    } finally {
      sys.close(handle.value);
    }
    try {
      if (kind === "dir") {
        await copyChildDirectory(state, reopened, destFd, name, path, depth);
      } else {
        copyFile(state, reopened, destFd, name, path, isExecutableMode(mode));
      }
    } finally {
      sys.close(reopened);
    }
  }
}

async function copyChildDirectory(
  state: WalkState,
  srcFd: number,
  destFd: number | undefined,
  name: Buffer,
  path: Buffer,
  depth: number,
): Promise<void> {
  const { sys } = state;
  state.directories++;
  state.hash.addDirectory(path);
  if (destFd === undefined) {
    await copyDirectory(state, srcFd, undefined, path, depth + 1);
    return;
  }
  const made = sys.mkdirat(destFd, name, BUILD_DIR_MODE);
  if (!made.ok) throw skillFsError("mkdir", path.toString(), made.errno);
  const child = openDirAt(sys, destFd, name);
  if (!child.ok) throw skillFsError("open", path.toString(), child.errno);
  try {
    await copyDirectory(state, srcFd, child.value, path, depth + 1);
    if (state.options.durable) fsyncSync(child.value);
    // Read-only only once complete: until then the copy needs to create entries in it.
    const chmod = sys.fchmod(child.value, SKILL_DIR_MODE);
    if (!chmod.ok) throw skillFsError("chmod", path.toString(), chmod.errno);
  } finally {
    sys.close(child.value);
  }
}

function copyFile(
  state: WalkState,
  srcFd: number,
  destFd: number | undefined,
  name: Buffer,
  path: Buffer,
  exec: boolean,
): void {
  const { sys, options, chunk } = state;
  const { limits } = options;
  const finalMode = exec ? SKILL_EXEC_FILE_MODE : SKILL_FILE_MODE;
  let out: number | undefined;
  if (destFd !== undefined) {
    // Created with its final read-only mode: the creating descriptor may still write it,
    // and nobody else can reach it yet (its directory is 0700 until the copy is complete).
    const created = sys.openat(
      destFd,
      name,
      O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
      finalMode,
    );
    if (!created.ok) throw skillFsError("create", path.toString(), created.errno);
    out = created.value;
  }
  try {
    const digest = createHash("sha256");
    let size = 0;
    for (;;) {
      const n = readSync(srcFd, chunk, 0, chunk.byteLength, size);
      if (n === 0) break;
      size += n;
      state.bytes += n;
      if (size > limits.maxFileBytes) throw tooLarge(path, "maxFileBytes", limits.maxFileBytes);
      if (state.bytes > limits.maxSkillBytes) {
        throw tooLarge(path, "maxSkillBytes", limits.maxSkillBytes);
      }
      const data = chunk.subarray(0, n);
      digest.update(data);
      if (out !== undefined) writeAll(out, data, size - n);
      // A short read of a regular file is its end: no second read just to see 0 bytes.
      if (n < chunk.byteLength) break;
    }
    if (out !== undefined) {
      if (options.durable) fdatasyncSync(out);
      fixMode(state, out, finalMode, path);
    }
    state.files++;
    state.hash.addFile(path, exec, size, digest.digest());
  } finally {
    if (out !== undefined) sys.close(out);
  }
}

/**
 * The umask may have stripped bits from the creation mode (a umask of 0077 would leave
 * 0400, unreadable for the sandbox user). The first file of each mode tells: when it came
 * out exact, the umask strips none of its bits and later files of that mode need no fchmod
 * (one syscall saved per file); otherwise every one is fchmod-ed. The umask is process-wide
 * and agent-host never changes it while running.
 */
function fixMode(state: WalkState, fd: number, mode: number, path: Buffer): void {
  let keeps = state.umaskKeeps.get(mode);
  if (keeps === undefined) {
    keeps = (fstatFd(state.sys, fd, path.toString()).mode & 0o7777) === mode;
    state.umaskKeeps.set(mode, keeps);
  }
  if (keeps) return;
  const chmod = state.sys.fchmod(fd, mode);
  if (!chmod.ok) throw skillFsError("chmod", path.toString(), chmod.errno);
}

function writeAll(fd: number, data: Buffer, position: number): void {
  let offset = 0;
  while (offset < data.byteLength) {
    offset += writeSync(fd, data, offset, data.byteLength - offset, position + offset);
  }
}

async function maybeYield(state: WalkState): Promise<void> {
  if (performance.now() - state.sliceStart < COPY_SLICE_MS) return;
  await yieldToLoop();
  state.options.signal.throwIfAborted();
  state.sliceStart = performance.now();
}

function shown(path: Buffer | undefined): string {
  return path === undefined ? "." : path.toString();
}

function tooLarge(path: Buffer | undefined, limitName: string, limit: number): WorkcellError {
  return new WorkcellError(
    "payload_too_large",
    `The skill is over the limit ${limitName} (${limit}) at '${shown(path)}'.`,
    { details: { reason: "skill_too_large", path: shown(path), limit, limit_name: limitName } },
  );
}

function sourceChanged(path: Buffer): WorkcellError {
  return new WorkcellError(
    "conflict",
    `The skill source changed during the copy ('${path}' disappeared): refresh again.`,
    { details: { reason: "source_changed", path: path.toString() } },
  );
}
