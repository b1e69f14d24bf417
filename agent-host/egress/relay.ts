import { connect, type Socket } from "node:net";
import type { Duplex } from "node:stream";
import type { EgressFlow } from "./egress-flow.ts";

/** Bytes per read from an upstream (one read is one write to the sandbox's socket). */
const READ_BYTES = 256 * 1024;
/** Read buffers kept for reuse per connection (the rest are left to the collector). */
const POOL_MAX = 2;

/**
 * An upstream socket whose reads land in a few reused buffers (net's `onread`), not in a
 * fresh Buffer each: a download through a tunnel is mostly reads from the upstream, and
 * their allocations were most of the proxy's garbage collection. `sink` takes each read; a
 * buffer goes back to the pool when its write to the sandbox is done (`release`).
 */
export type Upstream = {
  readonly socket: Socket;
  /** Set by relay; until then a read is copied and kept (never lost). */
  sink: ((bytes: Buffer, release: () => void) => boolean) | undefined;
  readonly early: Buffer[];
};

function pooledReads(up: { sink: Upstream["sink"]; early: Buffer[] }) {
  const free: Buffer[] = [];
  let current: Buffer = Buffer.allocUnsafe(READ_BYTES);
  return {
    buffer: () => {
      current = free.pop() ?? Buffer.allocUnsafe(READ_BYTES);
      return current;
    },
    callback: (bytes: number, buf: Uint8Array) => {
      const read = Buffer.from(buf.buffer, buf.byteOffset, bytes);
      const owner = buf as Buffer;
      const release = () => {
        if (free.length < POOL_MAX) free.push(owner);
      };
      if (up.sink === undefined) {
        up.early.push(Buffer.from(read));
        release();
        return true;
      }
      return up.sink(read, release);
    },
  };
}

/**
 * Dials the checked address (never a name: the name was resolved and checked once) with a
 * deadline and the caller's signal. Resolves with the connected upstream.
 */
export function dial(
  address: string,
  port: number,
  timeoutMs: number,
  signal: AbortSignal,
): Promise<Upstream> {
  return new Promise((resolve, reject) => {
    const up: Upstream = { socket: undefined as unknown as Socket, sink: undefined, early: [] };
    const socket = connect({ host: address, port, onread: pooledReads(up) });
    (up as { socket: Socket }).socket = socket;
    const fail = (error: Error) => {
      cleanup();
      socket.destroy();
      reject(error);
    };
    const onAbort = () => fail(new Error("aborted"));
    const timer = setTimeout(() => fail(new Error("connect_timeout")), timeoutMs);
    const cleanup = () => {
      clearTimeout(timer);
      signal.removeEventListener("abort", onAbort);
      socket.removeListener("error", fail);
    };
    signal.addEventListener("abort", onAbort, { once: true });
    socket.once("error", fail);
    socket.once("connect", () => {
      cleanup();
      socket.setNoDelay(true);
      resolve(up);
    });
  });
}

/**
 * Streams both ways with backpressure, never a whole body in memory, counting each chunk
 * against the run's budget; past it, or idle too long, both ends are cut and the flow says
 * why. Either end closing closes the other and ends the flow. Downloads take no stream
 * machinery: each upstream read is written to the sandbox as is, and reading pauses while
 * the sandbox's socket is full. With `uploadLimit` (one forwarded HTTP request) only that
 * many bytes of the sandbox's go upstream, the rest are dropped, and its half-close is not
 * passed on (the upstream was asked to close after its answer).
 */
export function relay(
  client: Duplex,
  upstream: Upstream,
  flow: EgressFlow,
  idleMs: number,
  uploadLimit?: number,
): void {
  const { socket } = upstream;
  const close = () => {
    client.destroy();
    socket.destroy();
    flow.finish();
  };
  const within = (direction: "up" | "down", bytes: number) => {
    if (flow.count(direction, bytes)) return true;
    flow.cut("egress_bytes_per_run");
    close();
    return false;
  };
  const down = (bytes: Buffer, release: () => void): boolean => {
    if (!within("down", bytes.length)) return false;
    if (client.write(bytes, release)) return true;
    client.once("drain", () => socket.resume());
    return false;
  };
  for (const bytes of upstream.early.splice(0)) down(bytes, () => {});
  upstream.sink = down;
  socket.setTimeout(idleMs, () => {
    flow.cut("idle_timeout");
    close();
  });
  // The upstream's end is the sandbox's end of stream (a half-close, as pipe does); the
  // upstream then closing must not destroy the sandbox's socket while the last bytes are
  // still queued for it (that cut the tail of answers): the flow ends once they are out.
  socket.on("end", () => client.end());
  client.on("error", close);
  socket.on("error", close);
  client.on("close", close);
  socket.on("close", () => {
    if (!client.writableEnded) return close();
    if (client.writableFinished) flow.finish();
    else client.once("finish", () => flow.finish());
  });
  let room = uploadLimit ?? Number.POSITIVE_INFINITY;
  client.on("data", (chunk: Buffer) => {
    const part = chunk.length <= room ? chunk : chunk.subarray(0, room);
    if (part.length === 0 || !within("up", part.length)) return;
    room -= part.length;
    if (!socket.write(part)) {
      client.pause();
      socket.once("drain", () => client.resume());
    }
  });
  if (uploadLimit === undefined) client.on("end", () => socket.end());
}
