import { createConnection, createServer, type Socket } from "node:net";

/** A TCP proxy a test can stop answering (connections stay open, nothing is forwarded). */
export type PausableProxy = {
  /** host:port the proxy listens on (127.0.0.1, a free port). */
  port: number;
  /** Stops forwarding in both directions: peers see a connection that hangs, not one that fails. */
  pause(): void;
  resume(): void;
  close(): Promise<void>;
};

/**
 * Forwards 127.0.0.1:<port> to `target`. pause() holds every byte in both directions
 * (the sockets stop being read), which is what a stalled network path or a frozen peer
 * looks like to a client: no error, no answer.
 */
export async function startPausableProxy(target: {
  host: string;
  port: number;
}): Promise<PausableProxy> {
  const pairs = new Set<[Socket, Socket]>();
  // Bytes that arrived while paused, in order, with where they were going.
  let held: Array<[Socket, Buffer]> | undefined;
  const forward = (to: Socket) => (chunk: Buffer) => {
    if (held) held.push([to, chunk]);
    else to.write(chunk);
  };
  const server = createServer((client) => {
    const upstream = createConnection(target);
    const pair: [Socket, Socket] = [client, upstream];
    pairs.add(pair);
    client.on("data", forward(upstream));
    upstream.on("data", forward(client));
    const end = () => {
      pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    client.on("error", end).on("close", end);
    upstream.on("error", end).on("close", end);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  if (address === null || typeof address === "string") throw new Error("proxy has no port");
  return {
    port: address.port,
    pause() {
      held ??= [];
    },
    resume() {
      const pending = held ?? [];
      held = undefined;
      for (const [to, chunk] of pending) if (!to.destroyed) to.write(chunk);
    },
    async close() {
      for (const [a, b] of pairs) {
        a.destroy();
        b.destroy();
      }
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
