import { createConnection, createServer, type Socket } from "node:net";

/** A TCP proxy in front of Postgres that a test can cut (a database outage) and restore. */
export type OutageProxy = {
  port: number;
  /** Severs every connection and refuses new ones until restore(). */
  cut(): void;
  restore(): void;
  close(): Promise<void>;
};

export async function startOutageProxy(target: {
  host: string;
  port: number;
}): Promise<OutageProxy> {
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    const upstream = createConnection(target);
    sockets.add(client).add(upstream);
    client.pipe(upstream).pipe(client);
    const end = () => {
      sockets.delete(client);
      sockets.delete(upstream);
      client.destroy();
      upstream.destroy();
    };
    client.on("error", end).on("close", end);
    upstream.on("error", end).on("close", end);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  if (address === null || typeof address === "string") throw new Error("proxy has no port");
  const port = address.port;
  let listening = true;
  return {
    port,
    // Not listening: new connections are refused (ECONNREFUSED), as with a stopped server.
    cut() {
      if (listening) server.close();
      listening = false;
      for (const socket of sockets) socket.destroy();
    },
    restore() {
      if (!listening) server.listen(port, "127.0.0.1");
      listening = true;
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      if (listening) await new Promise<void>((resolve) => server.close(() => resolve()));
      listening = false;
    },
  };
}
