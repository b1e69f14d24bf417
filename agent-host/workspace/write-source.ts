import { writeFully } from "./fd-io.ts";

/** Bytes for a write: in memory, or streamed (a web ReadableStream is an AsyncIterable). */
export type WriteSource =
  | Uint8Array
  | string
  | AsyncIterable<Uint8Array>
  | ReadableStream<Uint8Array>;

/** Thrown by pumpToFd when the source has more than `maxBytes`; the caller maps it. */
export class SourceTooLarge extends Error {
  override readonly name = "SourceTooLarge";
}

/**
 * Copies `source` into `fd` from offset 0 and returns the byte count. Stops as soon as the
 * count would pass `maxBytes` (it never buffers the rest), and checks `signal` before every
 * chunk. Leaving the loop early returns the iterator, which cancels a ReadableStream.
 */
export async function pumpToFd(
  fd: number,
  source: WriteSource,
  maxBytes: number,
  signal: AbortSignal | undefined,
): Promise<number> {
  signal?.throwIfAborted();
  if (typeof source === "string" || source instanceof Uint8Array) {
    const bytes = typeof source === "string" ? Buffer.from(source, "utf8") : source;
    if (bytes.byteLength > maxBytes) throw new SourceTooLarge();
    await writeFully(fd, bytes, 0);
    return bytes.byteLength;
  }
  let total = 0;
  for await (const chunk of source as AsyncIterable<Uint8Array>) {
    signal?.throwIfAborted();
    if (!(chunk instanceof Uint8Array))
      throw new TypeError("a write source must yield Uint8Array chunks");
    if (total + chunk.byteLength > maxBytes) throw new SourceTooLarge();
    await writeFully(fd, chunk, total);
    total += chunk.byteLength;
  }
  signal?.throwIfAborted();
  return total;
}
