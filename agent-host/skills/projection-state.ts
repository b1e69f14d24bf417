import { readSync, writeSync } from "node:fs";
import { z } from "zod";
import {
  Errno,
  type FsSyscalls,
  O_CLOEXEC,
  O_CREAT,
  O_NOFOLLOW,
  O_NONBLOCK,
  O_RDONLY,
  O_TRUNC,
  O_WRONLY,
} from "../workspace/syscalls.ts";
import { fstatFd, removeQuietly, STATE_SUFFIX, skillFsError } from "./skill-fs.ts";

/** A state file larger than this is not one of ours: it is ignored (and rewritten). */
export const MAX_STATE_FILE_BYTES = 4 * 1024 * 1024;
export const STATE_FILE_MODE = 0o600;
/** `<uid dirname>.state.tmp`: the state being written, renamed over the state file. */
export const STATE_TEMP_SUFFIX = ".tmp";

const slugStateSchema = z.object({
  /** Content hash of what is projected (equal to the catalogue's when it was copied). */
  contentHash: z.string(),
  /** Directory fingerprint of the source it was copied from (source-fingerprint.ts). */
  sourceFingerprint: z.string(),
  /** The source directories that fingerprint covers (base64 relative paths). */
  sourceDirs: z.array(z.string()),
  /** Inode of the projected directory, to notice it was replaced or removed behind our back. */
  dirIno: z.number(),
});

const projectionStateSchema = z.object({
  version: z.literal(2),
  slugs: z.record(z.string(), slugStateSchema),
});

export type SlugState = z.infer<typeof slugStateSchema>;
export type ProjectionState = z.infer<typeof projectionStateSchema>;

export function emptyProjectionState(): ProjectionState {
  return { version: 2, slugs: {} };
}

/**
 * What the last refresh projected for one uid, kept beside the projection (never inside
 * it: only the projection directory is mounted). Read and written only under the
 * projection's flock.
 *
 * It is a cache, not a source of truth: a missing, foreign or corrupt file reads as empty,
 * which only costs the next refresh a copy and a hash comparison.
 */
export function readProjectionState(
  sys: FsSyscalls,
  projectionsFd: number,
  dirname: string,
): ProjectionState {
  const name = dirname + STATE_SUFFIX;
  const opened = sys.openat(projectionsFd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (!opened.ok) {
    if (opened.errno === Errno.ENOENT || opened.errno === Errno.ELOOP)
      return emptyProjectionState();
    throw skillFsError("open", name, opened.errno);
  }
  try {
    const st = fstatFd(sys, opened.value, name);
    if (!st.isFile() || st.size > MAX_STATE_FILE_BYTES) return emptyProjectionState();
    const buffer = Buffer.alloc(st.size);
    let filled = 0;
    while (filled < buffer.byteLength) {
      const n = readSync(opened.value, buffer, filled, buffer.byteLength - filled, filled);
      if (n === 0) break;
      filled += n;
    }
    const parsed = projectionStateSchema.safeParse(
      JSON.parse(buffer.subarray(0, filled).toString("utf8")),
    );
    return parsed.success ? parsed.data : emptyProjectionState();
  } catch (err) {
    if (err instanceof SyntaxError) return emptyProjectionState();
    throw err;
  } finally {
    sys.close(opened.value);
  }
}

/** Replaces the state file atomically: a temp file beside it, renamed over it. */
export function writeProjectionState(
  sys: FsSyscalls,
  projectionsFd: number,
  dirname: string,
  state: ProjectionState,
): void {
  const name = dirname + STATE_SUFFIX;
  // A fixed temp name: only the flock holder writes it, and a leftover of a crashed
  // refresh is simply truncated and reused instead of piling up.
  const temp = name + STATE_TEMP_SUFFIX;
  const created = sys.openat(
    projectionsFd,
    temp,
    O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC,
    STATE_FILE_MODE,
  );
  if (!created.ok) throw skillFsError("create", temp, created.errno);
  try {
    if (!fstatFd(sys, created.value, temp).isFile())
      throw skillFsError("create", temp, Errno.EINVAL);
    const data = Buffer.from(JSON.stringify(state));
    let offset = 0;
    while (offset < data.byteLength) {
      offset += writeSync(created.value, data, offset, data.byteLength - offset, offset);
    }
  } catch (err) {
    sys.close(created.value);
    removeQuietly(sys, projectionsFd, temp);
    throw err;
  }
  sys.close(created.value);
  // rename(2) replaces a file or a symlink at `name` as a name; it never writes through one.
  const renamed = sys.renameat2(projectionsFd, temp, projectionsFd, name, 0);
  if (!renamed.ok) {
    removeQuietly(sys, projectionsFd, temp);
    throw skillFsError("rename", name, renamed.errno);
  }
}
