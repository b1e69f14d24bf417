import { connect, type Socket } from "node:net";
import type { Duplex } from "node:stream";
import type { EgressFlow } from "./egress-flow.ts";

/**
 * Dials the checked address (never a name: the name was resolved and checked once) with a
 * deadline and the caller's signal. Resolves with the connected socket.
 */
export function dial(
  address: string,
  port: number,
  timeoutMs: number,
  signal: AbortSignal,
): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: address, port });
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
      resolve(socket);
    });
  });
}

/**
 * Streams both ways (pipe: backpressure, never a whole body in memory), counting each chunk
 * against the run's budget; past it, or idle too long, both ends are cut and the flow says
 * why. Either end closing closes the other and ends the flow.
 */
export function relay(client: Duplex, upstream: Socket, flow: EgressFlow, idleMs: number): void {
  const close = () => {
    client.destroy();
    upstream.destroy();
    flow.finish();
  };
  const meter = (direction: "up" | "down") => (chunk: Buffer) => {
    if (!flow.count(direction, chunk.length)) {
      flow.cut("egress_bytes_per_run");
      close();
    }
  };
  client.on("data", meter("up"));
  upstream.on("data", meter("down"));
  upstream.setTimeout(idleMs, () => {
    flow.cut("idle_timeout");
    close();
  });
  client.on("error", close);
  upstream.on("error", close);
  client.on("close", close);
  upstream.on("close", close);
  client.pipe(upstream);
  upstream.pipe(client);
}
