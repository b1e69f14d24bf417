import { fdatasyncSync, fsyncSync, writeSync } from "node:fs";
import {
  Errno,
  type FsSyscalls,
  O_CLOEXEC,
  O_CREAT,
  O_EXCL,
  O_NOFOLLOW,
  O_WRONLY,
} from "../workspace/syscalls.ts";
import { ArchiveRejection } from "./archive-rejection.ts";
import {
  BUILD_DIR_MODE,
  BUILD_FILE_MODE,
  openDirAt,
  SKILL_DIR_MODE,
  SKILL_EXEC_FILE_MODE,
  SKILL_FILE_MODE,
  skillFsError,
} from "./skill-fs.ts";

export interface TreeWriterOptions {
  /** Most bytes of all files together; more is a `too_large` rejection. */
  readonly maxTotalBytes: number;
  /** fdatasync files and fsync directories (the source store must survive a crash). */
  readonly durable: boolean;
}

/**
 * Writes an extracted archive into a private, empty directory (`rootFd`), descriptor-
 * relative: every directory is created with mkdirat and opened O_NOFOLLOW by name inside
 * its parent's descriptor, every file created O_CREAT|O_EXCL|O_NOFOLLOW. Names were
 * validated by the archive plan; these flags are the second line: nothing existing is
 * ever written through, and a name can never resolve outside the root.
 *
 * Byte counts are enforced on the bytes actually written, not on what headers declare, so
 * an archive that lies about sizes is cut off at the limit.
 */
export interface TreeWriter {
  directory(components: readonly string[]): void;
  file(
    components: readonly string[],
    exec: boolean,
    chunks: AsyncIterable<Buffer>,
    maxBytes: number,
    signal: AbortSignal,
  ): Promise<number>;
  /** Makes every directory read-only (0555, children first) and closes them. */
  finish(): void;
  /** Closes whatever is open; for failure paths (the caller removes the tree). */
  close(): void;
}

export function createTreeWriter(
  sys: FsSyscalls,
  rootFd: number,
  options: TreeWriterOptions,
): TreeWriter {
  // Descriptors of the directories made so far, by path, in creation order. A parent is
  // always created before its children, so reverse order is children first.
  const dirs = new Map<string, number>([["", rootFd]]);
  let totalBytes = 0;

  function ensure(components: readonly string[]): number {
    let parentFd = rootFd;
    for (let i = 0; i < components.length; i++) {
      const path = components.slice(0, i + 1).join("/");
      const cached = dirs.get(path);
      if (cached !== undefined) {
        parentFd = cached;
        continue;
      }
      const name = components[i] as string;
      const made = sys.mkdirat(parentFd, name, BUILD_DIR_MODE);
      if (!made.ok && made.errno !== Errno.EEXIST) throw skillFsError("mkdir", path, made.errno);
      const opened = openDirAt(sys, parentFd, name);
      if (!opened.ok) throw skillFsError("open", path, opened.errno);
      dirs.set(path, opened.value);
      parentFd = opened.value;
    }
    return parentFd;
  }

  function closeAll(): void {
    for (const [path, fd] of dirs) if (path !== "") sys.close(fd);
    dirs.clear();
  }

  return {
    directory(components) {
      ensure(components);
    },

    async file(components, exec, chunks, maxBytes, signal) {
      const name = components[components.length - 1];
      if (name === undefined) throw new Error("a file needs a name");
      const parentFd = ensure(components.slice(0, -1));
      const path = components.join("/");
      const created = sys.openat(
        parentFd,
        name,
        O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
        BUILD_FILE_MODE,
      );
      if (!created.ok) throw skillFsError("create", path, created.errno);
      const fd = created.value;
      try {
        let written = 0;
        for await (const chunk of chunks) {
          signal.throwIfAborted();
          written += chunk.byteLength;
          totalBytes += chunk.byteLength;
          if (written > maxBytes) {
            throw new ArchiveRejection(
              "too_large",
              `The archive entry '${path}' expands beyond ${maxBytes} bytes.`,
              path,
            );
          }
          if (totalBytes > options.maxTotalBytes) {
            throw new ArchiveRejection(
              "too_large",
              `The archive expands to more than ${options.maxTotalBytes} bytes.`,
              path,
            );
          }
          let offset = 0;
          while (offset < chunk.byteLength) {
            offset += writeSync(
              fd,
              chunk,
              offset,
              chunk.byteLength - offset,
              written - chunk.byteLength + offset,
            );
          }
        }
        if (options.durable) fdatasyncSync(fd);
        const chmod = sys.fchmod(fd, exec ? SKILL_EXEC_FILE_MODE : SKILL_FILE_MODE);
        if (!chmod.ok) throw skillFsError("chmod", path, chmod.errno);
        return written;
      } finally {
        sys.close(fd);
      }
    },

    finish() {
      const entries = [...dirs.entries()].filter(([path]) => path !== "").reverse();
      try {
        for (const [path, fd] of entries) {
          if (options.durable) fsyncSync(fd);
          const chmod = sys.fchmod(fd, SKILL_DIR_MODE);
          if (!chmod.ok) throw skillFsError("chmod", path, chmod.errno);
        }
        if (options.durable) fsyncSync(rootFd);
      } finally {
        closeAll();
      }
    },

    close() {
      closeAll();
    },
  };
}
