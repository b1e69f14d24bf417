import { fdatasync, fsync, read, write } from "node:fs";

/**
 * Promise wrappers over Node's callback fs on raw descriptors (the layer opens files through
 * *at syscalls, so it holds numbers, not FileHandles). The bytes move on libuv's thread pool;
 * only the metadata syscalls run on the event loop.
 */

/** Writes all of `data` at `position`, looping over short writes. */
export async function writeFully(fd: number, data: Uint8Array, position: number): Promise<void> {
  let offset = 0;
  while (offset < data.byteLength) {
    const written = await new Promise<number>((resolve, reject) => {
      write(fd, data, offset, data.byteLength - offset, position + offset, (err, n) =>
        err ? reject(err) : resolve(n),
      );
    });
    offset += written;
  }
}

/** Reads up to `length` bytes at `position` into a fresh buffer; shorter only at end of file. */
export async function readAt(fd: number, length: number, position: number): Promise<Buffer> {
  const buffer = Buffer.allocUnsafe(length);
  let filled = 0;
  while (filled < length) {
    const n = await new Promise<number>((resolve, reject) => {
      read(fd, buffer, filled, length - filled, position + filled, (err, bytes) =>
        err ? reject(err) : resolve(bytes),
      );
    });
    if (n === 0) break;
    filled += n;
  }
  return filled === length ? buffer : buffer.subarray(0, filled);
}

/** fsync (metadata too) or fdatasync (data only). */
export function syncFd(fd: number, dataOnly = false): Promise<void> {
  return new Promise((resolve, reject) => {
    (dataOnly ? fdatasync : fsync)(fd, (err) => (err ? reject(err) : resolve()));
  });
}
