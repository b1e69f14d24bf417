/** Docker's stream ids in the multiplexed attach protocol (non-TTY execs). */
export const STDOUT_STREAM = 1;
export const STDERR_STREAM = 2;

const HEADER_BYTES = 8;

/**
 * Splits Docker's multiplexed exec stream into stdout and stderr. Each frame is an
 * 8-byte header (stream id, three zero bytes, big-endian payload length) and the
 * payload; frames arrive split and glued arbitrarily across socket chunks, so partial
 * headers and payloads are carried over to the next chunk. Payload bytes are handed on
 * as they arrive, never held until a frame is complete, so a large frame streams.
 */
export function createDemuxer(onFrame: (stream: number, payload: Buffer) => void) {
  let header = Buffer.alloc(0);
  let stream = 0;
  let remaining = 0;
  return function feed(chunk: Buffer): void {
    let offset = 0;
    while (offset < chunk.length) {
      if (remaining === 0) {
        const need = HEADER_BYTES - header.length;
        header = Buffer.concat([header, chunk.subarray(offset, offset + need)]);
        offset += Math.min(need, chunk.length - offset);
        if (header.length < HEADER_BYTES) return;
        stream = header[0] ?? 0;
        remaining = header.readUInt32BE(4);
        header = Buffer.alloc(0);
        continue;
      }
      const take = Math.min(remaining, chunk.length - offset);
      onFrame(stream, chunk.subarray(offset, offset + take));
      offset += take;
      remaining -= take;
    }
  };
}
