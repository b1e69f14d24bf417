import { createServer, request, type Server } from "node:http";
import type { AddressInfo } from "node:net";

export type DroppingProxy = {
  url: string;
  /** Last-Event-ID of each event-stream request, in order ("" when absent). */
  streamRequests: string[];
  close(): Promise<void>;
};

/**
 * An HTTP proxy in front of the API that cuts the first `drops` event streams right after
 * their first event frame (the TCP connection is destroyed mid-response, as a restarting
 * load balancer would), and passes everything else through untouched.
 */
export async function startDroppingProxy(target: string, drops = 1): Promise<DroppingProxy> {
  const upstream = new URL(target);
  const streamRequests: string[] = [];
  let remainingDrops = drops;
  const server: Server = createServer((req, res) => {
    const isStream = /\/v1\/runs\/[^/]+\/events(\?|$)/.test(req.url ?? "") && req.method === "GET";
    if (isStream) streamRequests.push(String(req.headers["last-event-id"] ?? ""));
    const drop = isStream && remainingDrops > 0;
    if (drop) remainingDrops -= 1;
    const out = request(
      {
        host: upstream.hostname,
        port: upstream.port,
        method: req.method,
        path: req.url,
        headers: { ...req.headers, host: upstream.host },
      },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        if (!drop) {
          answer.pipe(res);
          return;
        }
        let seen = "";
        answer.on("data", (chunk: Buffer) => {
          seen += chunk.toString("utf8");
          const first = seen.search(/(^|\n)id: [^\n]*\n(?:[^\n]+\n)*\n/);
          if (first === -1) return;
          const end = seen.indexOf("\n\n", first + 1) + 2;
          res.write(seen.slice(0, end), () => {
            answer.destroy();
            res.destroy();
          });
          seen = "";
          answer.removeAllListeners("data");
        });
      },
    );
    out.on("error", () => res.destroy());
    req.pipe(out);
  });
  await new Promise<void>((ready) => server.listen(0, "127.0.0.1", ready));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    streamRequests,
    close: () =>
      new Promise<void>((done) => {
        server.closeAllConnections();
        server.close(() => done());
      }),
  };
}
