import { readFile } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import { extname, join, normalize } from "node:path";

const TYPES: Readonly<Record<string, string>> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
};

export type StaticSite = {
  /** Its origin, e.g. http://127.0.0.1:41235: another origin than any other port's. */
  origin: string;
  close(): Promise<void>;
};

/**
 * A directory served over HTTP on a free loopback port, as a static host (a CDN, a
 * console's own site) would serve a built page: GET only, no CORS, nothing else.
 */
export async function serveStaticSite(dir: string): Promise<StaticSite> {
  const server: Server = createServer((req, res) => {
    const path = normalize(new URL(req.url ?? "/", "http://x").pathname).replace(/^\/+/, "");
    if (req.method !== "GET" || path.startsWith("..")) {
      res.writeHead(405).end();
      return;
    }
    const file = join(dir, path === "" ? "index.html" : path);
    readFile(file).then(
      (body) => {
        res.writeHead(200, { "content-type": TYPES[extname(file)] ?? "application/octet-stream" });
        res.end(body);
      },
      () => res.writeHead(404).end(),
    );
  });
  await new Promise<void>((listening) => server.listen(0, "127.0.0.1", listening));
  const address = server.address();
  if (address === null || typeof address === "string") throw new Error("no TCP address");
  return {
    origin: `http://127.0.0.1:${address.port}`,
    close: () =>
      new Promise<void>((closed) => {
        server.closeAllConnections();
        server.close(() => closed());
      }),
  };
}
