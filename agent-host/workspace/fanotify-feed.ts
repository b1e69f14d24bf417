import { closeSync, fstatSync, openSync, readSync } from "node:fs";
import { errno as lastErrno, load } from "koffi";

/** fanotify_init(2) flags: a notification group reporting file handles, never descriptors. */
const FAN_CLOEXEC = 0x1;
const FAN_NONBLOCK = 0x2;
const FAN_REPORT_FID = 0x200;
/** fanotify_mark(2): add a mark on the whole filesystem (every mount, every name). */
const FAN_MARK_ADD = 0x1;
const FAN_MARK_FILESYSTEM = 0x100;
/**
 * Everything that can change what a metadata walk sees: content (MODIFY, CLOSE_WRITE),
 * metadata (ATTRIB: chmod, chown, utimes, link count), names (CREATE, DELETE, MOVED_*) and
 * the directories themselves (DELETE_SELF, MOVE_SELF), for directories too (ONDIR).
 */
const FAN_MODIFY = 0x2;
const FAN_ATTRIB = 0x4;
const FAN_CLOSE_WRITE = 0x8;
const FAN_MOVED_FROM = 0x40;
const FAN_MOVED_TO = 0x80;
const FAN_CREATE = 0x100;
const FAN_DELETE = 0x200;
const FAN_DELETE_SELF = 0x400;
const FAN_MOVE_SELF = 0x800;
const FAN_Q_OVERFLOW = 0x4000;
const FAN_ONDIR = 0x40000000;
const WATCHED_MASK =
  FAN_MODIFY |
  FAN_ATTRIB |
  FAN_CLOSE_WRITE |
  FAN_MOVED_FROM |
  FAN_MOVED_TO |
  FAN_CREATE |
  FAN_DELETE |
  FAN_DELETE_SELF |
  FAN_MOVE_SELF |
  FAN_ONDIR;
/** Info records carrying a file handle: FID (the object), DFID_NAME and DFID (its directory). */
const FID_RECORDS = new Set([1, 2, 3]);
/** FILEID_INO32_GEN(_PARENT): ext2/3/4's handles start with the 32-bit inode number. */
const INO32_HANDLES = new Set([1, 2]);
const EXT4_SUPER_MAGIC = 0xef53n;
const STATFS_SIZE = 120;
const READ_BUFFER_BYTES = 256 * 1024;

/** What happened on the filesystem since the last drain. */
export interface FeedDrain {
  /** Inode numbers of every object (file or directory) reported, and of reported parents. */
  readonly inos: ReadonlySet<number>;
  /**
   * True when the kernel dropped events (queue overflow) or reported a handle this feed
   * cannot map to an inode: anything may have changed.
   */
  readonly lost: boolean;
}

export interface FanotifyFeed {
  /** The st_dev of the marked filesystem: only directories on it can be followed. */
  readonly dev: number;
  /** Non-blocking: reads every queued event. */
  drain(): FeedDrain;
  close(): void;
}

export type FeedOpen = { ok: true; feed: FanotifyFeed } | { ok: false; reason: string };

/**
 * A fanotify group with one FAN_MARK_FILESYSTEM mark on the filesystem holding `path`
 * (docs/decisions/0156): the kernel reports every change on that filesystem by inode,
 * whichever mount namespace, bind mount or hard link it came through, and says so when it
 * dropped events (FAN_Q_OVERFLOW). Needs CAP_SYS_ADMIN and Linux >= 5.1; only ext2/3/4 is
 * accepted because their file handles are known to begin with the inode number (checked
 * again on `path` itself). Any refusal is returned as a reason: the caller walks in full.
 */
export function openFanotifyFeed(path: string, libraryPath = "libc.so.6"): FeedOpen {
  let lib: ReturnType<typeof load>;
  try {
    lib = load(libraryPath);
  } catch (error) {
    return { ok: false, reason: `libc not loadable: ${String(error)}` };
  }
  const init = lib.func("int fanotify_init(unsigned int flags, unsigned int event_f_flags)");
  const mark = lib.func(
    "int fanotify_mark(int fd, unsigned int flags, uint64_t mask, int dirfd, const char *path)",
  );
  const fstatfs = lib.func("int fstatfs(int fd, void *buf)");
  const toHandle = lib.func(
    "int name_to_handle_at(int dirfd, const char *path, void *handle, void *mount_id, int flags)",
  );

  let dirFd: number;
  try {
    dirFd = openSync(path, "r");
  } catch (error) {
    return { ok: false, reason: `${path} not openable: ${String(error)}` };
  }
  try {
    const statfs = Buffer.alloc(STATFS_SIZE);
    if (fstatfs(dirFd, statfs) !== 0) return { ok: false, reason: `fstatfs: errno ${lastErrno()}` };
    const magic = statfs.readBigInt64LE(0);
    if (magic !== EXT4_SUPER_MAGIC) {
      return { ok: false, reason: `filesystem 0x${magic.toString(16)} is not ext2/3/4` };
    }
    const st = fstatSync(dirFd);
    const handle = Buffer.alloc(8 + 128);
    handle.writeUInt32LE(128, 0);
    // AT_EMPTY_PATH: the handle of dirFd itself.
    if (toHandle(dirFd, "", handle, Buffer.alloc(4), 0x1000) !== 0) {
      return { ok: false, reason: `name_to_handle_at: errno ${lastErrno()}` };
    }
    if (!INO32_HANDLES.has(handle.readInt32LE(4)) || handle.readUInt32LE(8) !== st.ino) {
      return { ok: false, reason: "file handles do not carry the inode number" };
    }
    const fd = init(FAN_CLOEXEC | FAN_NONBLOCK | FAN_REPORT_FID, 0) as number;
    if (fd < 0) return { ok: false, reason: `fanotify_init: errno ${lastErrno()}` };
    if (mark(fd, FAN_MARK_ADD | FAN_MARK_FILESYSTEM, WATCHED_MASK, dirFd, null) !== 0) {
      const errno = lastErrno();
      closeSync(fd);
      return { ok: false, reason: `fanotify_mark(FAN_MARK_FILESYSTEM): errno ${errno}` };
    }
    return { ok: true, feed: feedOn(fd, st.dev) };
  } finally {
    closeSync(dirFd);
  }
}

function feedOn(fd: number, dev: number): FanotifyFeed {
  const buffer = Buffer.alloc(READ_BUFFER_BYTES);
  let closed = false;
  return {
    dev,
    drain() {
      const inos = new Set<number>();
      let lost = false;
      for (;;) {
        let n: number;
        try {
          n = readSync(fd, buffer, 0, buffer.length, null);
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code === "EAGAIN") break;
          // A read that fails says nothing about what was missed: everything may have.
          return { inos, lost: true };
        }
        if (n <= 0) break;
        if (parseEvents(buffer.subarray(0, n), inos)) lost = true;
      }
      return { inos, lost };
    },
    close() {
      if (closed) return;
      closed = true;
      closeSync(fd);
    },
  };
}

/** Adds every handle's inode to `inos`; true when something could not be mapped. */
function parseEvents(bytes: Buffer, inos: Set<number>): boolean {
  let lost = false;
  let at = 0;
  while (at + 24 <= bytes.length) {
    const eventLen = bytes.readUInt32LE(at);
    const metaLen = bytes.readUInt16LE(at + 6);
    const mask = Number(bytes.readBigUInt64LE(at + 8) & 0xffffffffn);
    const eventFd = bytes.readInt32LE(at + 16);
    if (eventLen < 24 || at + eventLen > bytes.length) return true;
    if (eventFd >= 0) closeSync(eventFd);
    if (mask & FAN_Q_OVERFLOW) lost = true;
    let info = at + metaLen;
    while (info + 4 <= at + eventLen) {
      const type = bytes.readUInt8(info);
      const len = bytes.readUInt16LE(info + 2);
      if (len < 4) return true;
      if (FID_RECORDS.has(type)) {
        // header (4) + fsid (8) + handle_bytes (4) + handle_type (4) + f_handle
        const handleType = bytes.readInt32LE(info + 16);
        if (INO32_HANDLES.has(handleType) && len >= 24) inos.add(bytes.readUInt32LE(info + 20));
        else lost = true;
      }
      info += len;
    }
    at += eventLen;
  }
  return lost;
}
