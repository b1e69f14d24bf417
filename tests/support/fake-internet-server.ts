// The servers of the fake internet (tests/support/fake-internet.ts), run inside its network
// namespace: `node fake-internet-server.ts <address> <certDir> [<staticDir>]` (GET /static/…
// serves the files below staticDir: a git repository over git's "dumb" HTTP protocol, wheels;
// GET /simple/<name>/ its simple-index page). HTTP on :80, HTTPS on :443,
// a TCP echo on :22, and a control port (:9000) answering GET /seen with every request and
// connection the servers saw, so a test asserts what got through (and that nothing else did).
import { readFileSync } from "node:fs";
import { createServer as createHttp, type IncomingMessage, type ServerResponse } from "node:http";
import { createServer as createHttps } from "node:https";
import { createServer as createTcp } from "node:net";
import { join } from "node:path";

const [address = "", certDir = "", staticDir] = process.argv.slice(2);
type Seen = {
  port: number;
  host: string | null;
  path: string | null;
  method: string | null;
  /** The Authorization header as received (what a secret swap delivered). */
  auth?: string | null;
  /** The first 4 KiB of the request body. */
  body?: string;
};
const seen: Seen[] = [];
/** GET /private/… needs this token (Bearer, or the password of Basic); set on :9000 /expect/<t>. */
let expected: string | undefined;

function authorized(header: string | undefined): boolean {
  if (expected === undefined || header === undefined) return false;
  if (header === `Bearer ${expected}`) return true;
  const basic = /^Basic (.+)$/.exec(header);
  const decoded = basic === null ? "" : Buffer.from(basic[1] ?? "", "base64").toString();
  return decoded.split(":").slice(1).join(":") === expected;
}

function site(port: number) {
  return (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      seen.push({
        port,
        host: req.headers.host ?? null,
        path: req.url ?? null,
        method: req.method ?? null,
        auth: req.headers.authorization ?? null,
        body: Buffer.concat(chunks).subarray(0, 4096).toString(),
      });
      serve(port, req, res);
    });
  };
}

function serve(port: number, req: IncomingMessage, res: ServerResponse) {
  {
    if (req.url?.startsWith("/private/") === true) {
      if (!authorized(req.headers.authorization)) {
        res.writeHead(401, {
          "www-authenticate": 'Basic realm="fake"',
          "content-type": "text/plain",
        });
        return res.end("unauthorized\n");
      }
      req.url = `/static/${req.url.slice("/private/".length)}`;
    }
    const big = /^\/bytes\/(\d+)$/.exec(req.url ?? "");
    if (big !== null) {
      const total = Number(big[1]);
      res.writeHead(200, { "content-type": "application/octet-stream", "content-length": total });
      const chunk = Buffer.alloc(64 * 1024, 120);
      let sent = 0;
      const pump = () => {
        while (sent < total) {
          const part = chunk.subarray(0, Math.min(chunk.length, total - sent));
          sent += part.length;
          if (!res.write(part)) return void res.once("drain", pump);
        }
        res.end();
      };
      return pump();
    }
    const pathname = new URL(req.url ?? "/", "http://fake").pathname;
    const file = /^\/static\/([A-Za-z0-9._/-]+)$/.exec(pathname);
    if (file !== null && staticDir !== undefined && !(file[1] ?? "").includes("..")) {
      try {
        const bytes = readFileSync(join(staticDir, file[1] ?? ""));
        res.writeHead(200, { "content-type": "application/octet-stream" });
        return res.end(bytes);
      } catch {
        res.writeHead(404);
        return res.end();
      }
    }
    // A package index (PEP 503 "simple"): /simple/<name>/ is <staticDir>/simple/<name>/index.html,
    // served as HTML (pip skips an index page of any other type).
    const index = /^\/simple\/([a-z0-9-]+)\/$/.exec(pathname);
    if (index !== null && staticDir !== undefined) {
      try {
        const page = readFileSync(join(staticDir, "simple", index[1] ?? "", "index.html"));
        res.writeHead(200, { "content-type": "text/html" });
        return res.end(page);
      } catch {
        res.writeHead(404);
        return res.end();
      }
    }
    res.writeHead(200, { "content-type": "text/plain" });
    res.end(`hello from ${req.headers.host ?? "?"} on ${port}\n`);
  }
}

createHttp(site(80)).listen(80, address);
createHttps(
  { key: readFileSync(`${certDir}/key.pem`), cert: readFileSync(`${certDir}/cert.pem`) },
  site(443),
).listen(443, address);
// The same names with a certificate nobody trusts (a bound host's impostor).
createHttps(
  {
    key: readFileSync(`${certDir}/rogue-key.pem`),
    cert: readFileSync(`${certDir}/rogue-cert.pem`),
  },
  site(8443),
).listen(8443, address);
createTcp((socket) => {
  seen.push({ port: 22, host: null, path: null, method: null });
  socket.on("error", () => socket.destroy());
  socket.pipe(socket);
}).listen(22, address);
createHttp((req, res) => {
  if (req.url === "/reset") seen.length = 0;
  const expect = /^\/expect\/([^/]+)$/.exec(req.url ?? "");
  if (expect !== null) expected = decodeURIComponent(expect[1] ?? "");
  res.writeHead(200, { "content-type": "application/json" });
  res.end(JSON.stringify(seen));
}).listen(9000, address, () => process.stdout.write("ready\n"));
