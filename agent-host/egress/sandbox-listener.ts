import { createServer as createHttpServer } from "node:http";
import { createServer, type Server, type Socket } from "node:net";
import type { HttpProxyDeps } from "./http-proxy-deps.ts";
import { handleHttpProxy } from "./http-proxy-handlers.ts";
import { parseProxyRequestHead } from "./proxy-request-head.ts";
import { forwardRawHttp } from "./raw-http-forward.ts";
import { createSocksHandler } from "./socks-handler.ts";

/** SOCKS4/5 greetings start with their version byte; HTTP with a letter of its method. */
const SOCKS_FIRST_BYTES = new Set([0x04, 0x05]);

export type SandboxListener = {
  readonly path: string;
  close(): Promise<void>;
};

export type ListenerHooks = {
  /** A connection closed at accept because the sandbox has its maximum open. */
  readonly onDropped: () => void;
};

/**
 * One sandbox's Unix socket: every connection on it is that sandbox's (the identity is in
 * `deps.sandbox`, fixed here), so nothing the sandbox sends can claim another identity. The
 * first byte picks the protocol: SOCKS5 to the SOCKS handler, anything else to the HTTP
 * proxy, on the same socket, so one relay inside the sandbox serves both. A plainly framed
 * plain-HTTP request of a sandbox without secrets is forwarded as bytes
 * (raw-http-forward.ts); CONNECT and everything else go to node:http.
 */
export async function openSandboxListener(
  path: string,
  deps: HttpProxyDeps,
  hooks: ListenerHooks,
): Promise<SandboxListener> {
  const http = createHttpServer({
    // Bodies move in 64 KiB chunks, as tunnels do (the default 16 KiB quadruples the writes).
    highWaterMark: 64 * 1024,
    headersTimeout: deps.limits.headersTimeoutMs,
    requestTimeout: 0,
    keepAliveTimeout: deps.limits.headersTimeoutMs,
  });
  handleHttpProxy(http, deps);
  const socks = createSocksHandler(deps);
  const sockets = new Set<Socket>();
  const server: Server = createServer((socket) => {
    sockets.add(socket);
    socket.once("close", () => sockets.delete(socket));
    socket.on("error", () => socket.destroy());
    const timer = setTimeout(() => socket.destroy(), deps.limits.headersTimeoutMs);
    let seen = Buffer.alloc(0);
    const sniff = () => {
      for (let chunk = socket.read(); chunk !== null; chunk = socket.read())
        seen = Buffer.concat([seen, chunk as Buffer]);
      if (seen.length === 0) return;
      const socksGreeting = SOCKS_FIRST_BYTES.has(seen[0] ?? 0);
      // A sandbox holding secrets never takes the raw path: its requests must pass the
      // placeholder swap and the exfiltration guard of the node:http path (decision 0134).
      const raw = !socksGreeting && (deps.secrets?.placeholders.size ?? 0) === 0;
      const head = raw ? parseProxyRequestHead(seen) : undefined;
      if (head === "incomplete") return;
      socket.off("readable", sniff);
      clearTimeout(timer);
      // Idle time of the handshakes; relays then set their own.
      socket.setTimeout(deps.limits.idleTimeoutMs, () => socket.destroy());
      if (head !== undefined) {
        // A plainly framed plain-HTTP request: forwarded as bytes (raw-http-forward.ts).
        forwardRawHttp(deps, socket, head, seen.subarray(head.headLength)).catch(() =>
          socket.destroy(),
        );
        return;
      }
      socket.unshift(seen);
      if (socksGreeting) socks(socket);
      else http.emit("connection", socket);
    };
    socket.on("readable", sniff);
  });
  server.maxConnections = deps.limits.maxConnectionsPerSandbox;
  server.on("drop", hooks.onDropped);
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(path, () => {
      server.removeListener("error", reject);
      resolve();
    });
  });
  server.on("error", () => {});
  return {
    path,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        http.close();
        server.close(() => resolve());
      }),
  };
}
