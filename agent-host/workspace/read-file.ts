import { domainError, WorkcellError } from "../../shared/errors/index.ts";
import { type EntryInfo, entryInfoOf, entryKindOf } from "./entry-kind.ts";
import {
  type ErrnoErrorContext,
  errnoError,
  isADirectory,
  lookupError,
  mapNodeIoError,
  tooLarge,
} from "./errno-error.ts";
import { readAt } from "./fd-io.ts";
import { displayPath, type FsContext, fstatOrThrow } from "./fs-context.ts";
import { O_NOCTTY, O_NONBLOCK, O_PATH, O_RDONLY } from "./syscalls.ts";

/** Bytes per read(2) of a stream. */
export const READ_CHUNK_BYTES = 64 * 1024;

/** An inclusive byte range, as in an HTTP `Range: bytes=start-end` header. */
export interface ByteRange {
  readonly start: number;
  readonly end: number;
}

/**
 * An open regular file. `info.size` is its size when opened; the HTTP layer checks a Range
 * against it (416) before calling `stream`. `stream` may be called once and takes over the
 * descriptor (closed at end, on error and on cancel); otherwise call `close`.
 */
export interface WorkspaceFileReader {
  readonly info: EntryInfo;
  stream(options?: {
    readonly range?: ByteRange;
    readonly signal?: AbortSignal;
  }): ReadableStream<Uint8Array>;
  close(): void;
}

/**
 * Opens a regular file for reading, never anything else.
 *
 * The path is first opened O_PATH (no-follow, beneath the root): that gives a handle without
 * calling the inode's open routine, so a FIFO cannot block us, a socket cannot fail oddly, a
 * device driver (a watchdog, a tape, a tty) sees nothing. fstat on that handle decides: a
 * symlink or special file is forbidden (403), a directory is invalid (400). Only a regular
 * file is then opened for reading, by reopening the same inode through /proc/self/fd (no
 * second path lookup, so nothing can be swapped in between), with O_NONBLOCK and O_NOCTTY
 * as a second guard.
 */
export function openFileReader(
  ctx: FsContext,
  rootFd: number,
  names: readonly string[],
  signal?: AbortSignal,
): WorkspaceFileReader {
  signal?.throwIfAborted();
  const errCtx = { op: "read", path: displayPath(names) };
  if (names.length === 0) throw isADirectory(errCtx);
  const handle = ctx.resolver.open(rootFd, names, O_PATH);
  if (!handle.ok) {
    throw lookupError(ctx.sys, rootFd, names, handle.errno, errCtx, { finalFileCode: "not_found" });
  }
  let fd: number;
  let info: EntryInfo;
  try {
    const st = fstatOrThrow(ctx, handle.value, errCtx);
    refuseUnlessFile(entryKindOf(st), errCtx);
    const reopened = ctx.sys.reopen(handle.value, O_RDONLY | O_NONBLOCK | O_NOCTTY);
    if (!reopened.ok) throw errnoError(reopened.errno, errCtx);
    fd = reopened.value;
    info = entryInfoOf(names[names.length - 1] as string, st);
  } finally {
    ctx.sys.close(handle.value);
  }
  return createReader(ctx, fd, info, errCtx);
}

/** Reads a whole regular file into memory, refusing more than `maxBytes`. */
export async function readEntry(
  ctx: FsContext,
  rootFd: number,
  names: readonly string[],
  options: { readonly maxBytes?: number; readonly signal?: AbortSignal } = {},
): Promise<Buffer> {
  const maxBytes = options.maxBytes ?? ctx.limits.maxReadBytes;
  const reader = openFileReader(ctx, rootFd, names, options.signal);
  const errCtx = { op: "read", path: displayPath(names) };
  try {
    if (reader.info.size > maxBytes) throw tooLarge(errCtx, "maxBytes", maxBytes);
    const chunks: Buffer[] = [];
    let total = 0;
    for await (const chunk of reader.stream({ signal: options.signal })) {
      total += chunk.byteLength;
      // The file may have grown since fstat: the bound holds on what is actually read.
      if (total > maxBytes) throw tooLarge(errCtx, "maxBytes", maxBytes);
      chunks.push(Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength));
    }
    return Buffer.concat(chunks, total);
  } finally {
    reader.close();
  }
}

/** stat without following: regular files and real directories only. */
export function statEntry(
  ctx: FsContext,
  rootFd: number,
  names: readonly string[],
  signal?: AbortSignal,
): EntryInfo {
  signal?.throwIfAborted();
  const errCtx = { op: "stat", path: displayPath(names) };
  const handle = ctx.resolver.open(rootFd, names, O_PATH);
  if (!handle.ok) {
    throw lookupError(ctx.sys, rootFd, names, handle.errno, errCtx, { finalFileCode: "not_found" });
  }
  try {
    const st = fstatOrThrow(ctx, handle.value, errCtx);
    const kind = entryKindOf(st);
    if (kind !== "dir") refuseUnlessFile(kind, errCtx);
    return entryInfoOf(names[names.length - 1] ?? "", st);
  } finally {
    ctx.sys.close(handle.value);
  }
}

function refuseUnlessFile(kind: ReturnType<typeof entryKindOf>, errCtx: ErrnoErrorContext): void {
  switch (kind) {
    case "file":
      return;
    case "dir":
      throw isADirectory(errCtx);
    case "symlink":
      throw domainError("symlink_refused", { details: { path: errCtx.path, op: errCtx.op } });
    case "special":
      throw domainError("special_file_refused", { details: { path: errCtx.path, op: errCtx.op } });
  }
}

function createReader(
  ctx: FsContext,
  fd: number,
  info: EntryInfo,
  errCtx: ErrnoErrorContext,
): WorkspaceFileReader {
  let state: "open" | "streaming" | "closed" = "open";
  let reading: Promise<unknown> | undefined;
  // A descriptor number is reused by the next open as soon as it is closed, so it is never
  // closed while a read on it is in flight: a cancel during a read defers the close.
  const release = (): void => {
    if (state === "closed") return;
    state = "closed";
    if (reading === undefined) ctx.sys.close(fd);
    else void reading.finally(() => ctx.sys.close(fd));
  };
  return {
    info,
    close() {
      if (state === "open") release();
    },
    stream(options = {}) {
      if (state !== "open") {
        throw new Error("WorkspaceFileReader.stream: the reader is already streamed or closed");
      }
      const range = options.range ?? { start: 0, end: info.size - 1 };
      if (
        !Number.isSafeInteger(range.start) ||
        !Number.isSafeInteger(range.end) ||
        range.start < 0
      ) {
        throw new WorkcellError("invalid_request", "The byte range is malformed.", {
          details: { path: errCtx.path, reason: "bad_range" },
        });
      }
      state = "streaming";
      let position = range.start;
      // Never past what was asked for nor past the size seen at open: a file growing under
      // a Range response must not make it longer than its Content-Length.
      const stop = Math.min(range.end, info.size - 1) + 1;
      const signal = options.signal;
      return new ReadableStream<Uint8Array>({
        async pull(controller) {
          try {
            signal?.throwIfAborted();
            const want = Math.min(READ_CHUNK_BYTES, stop - position);
            let chunk: Buffer = Buffer.alloc(0);
            if (want > 0 && state === "streaming") {
              const pending = readAt(fd, want, position);
              reading = pending;
              try {
                chunk = await pending;
              } finally {
                reading = undefined;
              }
            }
            if (state !== "streaming") return; // cancelled during the read
            if (chunk.byteLength === 0) {
              release();
              controller.close();
              return;
            }
            position += chunk.byteLength;
            controller.enqueue(chunk);
          } catch (err) {
            release();
            controller.error(mapNodeIoError(err, errCtx));
          }
        },
        cancel() {
          release();
        },
      });
    },
  };
}
