import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { serve } from "@hono/node-server";

/** Loopback unless the wiring says otherwise: exposing the data plane is a deliberate act. */
export const DEFAULT_DATA_PLANE_HOSTNAME = "127.0.0.1";
/**
 * Longest time one request may take, body included. Node's default (300 s) would cut a
 * 1 GiB upload on a slow link; slow-header attacks are still bounded by `headersTimeout`.
 */
export const DEFAULT_DATA_PLANE_REQUEST_TIMEOUT_MS = 60 * 60 * 1000;

export interface DataPlaneServerOptions {
  /** The app from `createDataPlaneApp` (anything with a web-standard `fetch`). */
  readonly app: { fetch: (request: Request) => Response | Promise<Response> };
  /** DATA_PLANE_PORT; 0 picks a free port (tests). */
  readonly port: number;
  readonly hostname?: string;
  readonly requestTimeoutMs?: number;
  /** Aborting it closes the server like `close()`. */
  readonly signal?: AbortSignal;
}

export interface DataPlaneServer {
  /** `http://<host>:<port>`, the base URL to put in DATA_PLANE_URL locally. */
  readonly url: string;
  readonly port: number;
  /** Stops accepting, lets requests in flight finish, then resolves. */
  close(): Promise<void>;
}

/** Serves the data-plane app on Node (@hono/node-server) and resolves once it listens. */
export function startDataPlaneServer(options: DataPlaneServerOptions): Promise<DataPlaneServer> {
  options.signal?.throwIfAborted();
  const hostname = options.hostname ?? DEFAULT_DATA_PLANE_HOSTNAME;
  return new Promise((resolve, reject) => {
    const server = serve(
      { fetch: options.app.fetch, port: options.port, hostname },
      (info: AddressInfo) => {
        server.off("error", reject);
        let closing: Promise<void> | undefined;
        const close = (): Promise<void> => {
          closing ??= new Promise<void>((done) => {
            server.close(() => done());
            // Keep-alive connections with no request in flight would hold close() open.
            server.closeIdleConnections();
          });
          return closing;
        };
        options.signal?.addEventListener("abort", () => void close(), { once: true });
        const host = info.family === "IPv6" ? `[${info.address}]` : info.address;
        resolve({ url: `http://${host}:${info.port}`, port: info.port, close });
      },
    ) as Server;
    server.requestTimeout = options.requestTimeoutMs ?? DEFAULT_DATA_PLANE_REQUEST_TIMEOUT_MS;
    server.once("error", reject);
  });
}
