import { createServer, type Socket } from "node:net";

/** A peer that accepts connections and never answers: a hung service, not a down one. */
export type SilentServer = {
  /** http://127.0.0.1:<port> */
  url: string;
  /** Connections it accepted (each one a request somebody is waiting on). */
  accepted(): number;
  /** Connections still open: a client that gave up has closed its own. */
  open(): number;
  close(): Promise<void>;
};

/**
 * Listens on a free loopback port; with `respondHead`, answers each connection with
 * those bytes (say, a status line and headers promising a body) and then goes silent.
 */
export async function startSilentServer(respondHead?: string): Promise<SilentServer> {
  const sockets = new Set<Socket>();
  let accepted = 0;
  const server = createServer((socket) => {
    accepted++;
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
    socket.on("error", () => socket.destroy());
    // Read (and drop) what arrives, so a client's FIN is seen and the socket closes.
    socket.resume();
    if (respondHead !== undefined) socket.once("data", () => socket.write(respondHead));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  if (address === null || typeof address === "string") throw new Error("no port");
  return {
    url: `http://127.0.0.1:${address.port}`,
    accepted: () => accepted,
    open: () => sockets.size,
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
