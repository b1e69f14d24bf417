// The egress proxy's cost (issue #34): a 10 MB download and a small GET from the fake
// internet through the proxy (in a process of its own, its policy read from Postgres per
// connection, like a node's) against the same from the host directly; then 200 concurrent
// tunnels from 20 sandboxes, with the proxy's RSS and CPU per connection. Needs root (the
// fake internet is a network namespace).
import { spawn } from "node:child_process";
import { readFile } from "node:fs/promises";
import { request } from "node:http";
import { connect as netConnect } from "node:net";
import { createInterface } from "node:readline";
import type { Duplex } from "node:stream";
import { connect as tlsConnect } from "node:tls";
import { putNetworkOverride } from "../../shared/network/network-policy-store.ts";
import { startFakeInternet } from "../support/fake-internet.ts";
import { startBenchStack } from "./bench-stack.ts";
import { interleaved, report } from "./measure.ts";

const TEN_MB = 10 * 1024 * 1024;
/**
 * Interleaved rounds per 10 MB comparison: a download is ~15 ms, and the median of 15 moved
 * by ±0.15x between runs of the same build on 2 cores; 60 make it steadier (decision 0192).
 */
const TEN_MB_ROUNDS = 60;

/** GET `path` (absolute URL through a proxy socket, or direct), resolving with the bytes read. */
function get(url: string, via?: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const target = new URL(url);
    const req = request(
      via === undefined
        ? { host: target.hostname, port: 80, path: target.pathname, agent: false }
        : { socketPath: via, path: url, agent: false },
      (res) => {
        let bytes = 0;
        res.on("data", (chunk: Buffer) => {
          bytes += chunk.length;
        });
        res.on("end", () => resolve(bytes));
        res.on("error", reject);
      },
    );
    req.setTimeout(60_000, () => req.destroy(new Error("timeout")));
    req.on("error", reject);
    req.end();
  });
}

/**
 * GET over TLS, on a socket made by `open` (a direct TCP connection, or a CONNECT tunnel
 * through a proxy socket): the bytes read until the server closes.
 */
async function tlsGet(open: () => Promise<Duplex>, host: string, path: string, ca: string) {
  const socket = await open();
  return new Promise<number>((resolve, reject) => {
    const tls = tlsConnect({ socket, servername: host, ca }, () =>
      tls.write(`GET ${path} HTTP/1.1\r\nhost: ${host}\r\nconnection: close\r\n\r\n`),
    );
    let bytes = 0;
    tls.on("data", (chunk: Buffer) => {
      bytes += chunk.length;
    });
    tls.on("end", () => resolve(bytes));
    tls.on("error", reject);
  });
}

function tunnel(via: string, authority: string): Promise<Duplex> {
  return new Promise((resolve, reject) => {
    const req = request({ socketPath: via, method: "CONNECT", path: authority, agent: false });
    req.on("connect", (res, socket: Duplex) =>
      res.statusCode === 200 ? resolve(socket) : reject(new Error(`CONNECT ${res.statusCode}`)),
    );
    req.on("error", reject);
    req.end();
  });
}

function tcp(address: string, port: number): Promise<Duplex> {
  return new Promise((resolve, reject) => {
    const socket = netConnect({ host: address, port }, () => resolve(socket));
    socket.on("error", reject);
  });
}

/** A CONNECT tunnel's status through a proxy socket (the tunnel is closed at once). */
function connectStatus(via: string, authority: string): Promise<number> {
  return new Promise((resolve) => {
    const req = request({ socketPath: via, method: "CONNECT", path: authority, agent: false });
    req.on("connect", (res, socket) => {
      socket.destroy();
      resolve(res.statusCode ?? 0);
    });
    req.on("error", () => resolve(0));
    req.end();
  });
}

/**
 * The proxy process's CPU per call of the functions `counted` wraps, between now and
 * perCall(): on 2 cores the proxy is a third busy process beside the client and the server,
 * so its CPU is what a download through it costs beyond the direct one.
 */
async function proxyCpu(stats: () => Promise<{ cpuMicros: number }>) {
  const before = await stats();
  let calls = 0;
  return {
    counted:
      <T>(fn: () => Promise<T>) =>
      () => {
        calls++;
        return fn();
      },
    perCall: async () => ((await stats()).cpuMicros - before.cpuMicros) / 1000 / calls,
  };
}

const net = await startFakeInternet();
const stack = await startBenchStack({ maxConnections: 20 });
try {
  const host = net.name("allowed");
  await net.addHosts([[host, net.address]]);
  await putNetworkOverride(stack.db, "bench", { mode: "allowlist", allow: [host] });
  // The proxy runs in a process of its own, as on a node (agent-host vs sandbox clients).
  const child = spawn(
    process.execPath,
    [
      new URL("./egress-proxy-child.ts", import.meta.url).pathname,
      JSON.stringify({ dbUrl: stack.url, dir: stack.dataRoot, sandboxes: 21 }),
    ],
    { stdio: ["pipe", "pipe", "inherit"] },
  );
  const lines = createInterface({ input: child.stdout });
  const nextLine = () =>
    new Promise<string>((resolve) => lines.once("line", (line: string) => resolve(line)));
  const { paths } = JSON.parse(await nextLine()) as { paths: string[] };
  const stats = async () => {
    child.stdin.write("stats\n");
    return JSON.parse(await nextLine()) as { rss: number; cpuMicros: number };
  };
  const one = { listenPath: paths[0] ?? "" };
  // The direct side resolves through the node's resolver too (the name is in /etc/hosts).
  const plainCpu = await proxyCpu(stats);
  const [direct10, proxied10] = await interleaved(
    [
      ["10 MB GET, host directly (baseline)", () => get(`http://${host}/bytes/${TEN_MB}`)],
      [
        "10 MB GET through the proxy",
        plainCpu.counted(() => get(`http://${host}/bytes/${TEN_MB}`, one.listenPath)),
      ],
    ],
    TEN_MB_ROUNDS,
  );
  const plainCpuMs = await plainCpu.perCall();
  const [directSmall, proxiedSmall] = await interleaved(
    [
      ["small GET, host directly (baseline)", () => get(`http://${host}/hello`)],
      ["small GET through the proxy", () => get(`http://${host}/hello`, one.listenPath)],
    ],
    200,
  );
  const ca = await readFile(net.certPath, "utf8");
  const tlsCpu = await proxyCpu(stats);
  const [directTls, proxiedTls] = await interleaved(
    [
      [
        "10 MB HTTPS GET, host directly (baseline)",
        () => tlsGet(() => tcp(net.address, 443), host, `/bytes/${TEN_MB}`, ca),
      ],
      [
        "10 MB HTTPS GET through a CONNECT tunnel",
        tlsCpu.counted(() =>
          tlsGet(() => tunnel(one.listenPath, `${host}:443`), host, `/bytes/${TEN_MB}`, ca),
        ),
      ],
    ],
    TEN_MB_ROUNDS,
  );
  const tlsCpuMs = await tlsCpu.perCall();
  if (!direct10 || !proxied10 || !directSmall || !proxiedSmall || !directTls || !proxiedTls)
    throw new Error("no samples");
  report("10 MB download, plain HTTP forwarded (time; throughput is its inverse)", direct10, [
    proxied10,
  ]);
  report("10 MB download over HTTPS, CONNECT tunnel (what pip and npm do)", directTls, [
    proxiedTls,
  ]);
  console.log(
    `proxy CPU per 10 MB download: ${plainCpuMs.toFixed(2)} ms plain HTTP, ${tlsCpuMs.toFixed(2)} ms through a tunnel (its reads and writes, the kernel's copies included)`,
  );
  report("small GET (time to the whole answer)", directSmall, [proxiedSmall]);

  const before = await stats();
  const statuses = await Promise.all(
    paths
      .slice(1)
      .flatMap((path) => Array.from({ length: 10 }, () => connectStatus(path, `${host}:443`))),
  );
  const after = await stats();
  const refused = statuses.filter((status) => status !== 200).length;
  console.log(
    `\n## 200 concurrent CONNECTs from 20 sandboxes\nrefused ${refused} of ${statuses.length}; proxy CPU ${((after.cpuMicros - before.cpuMicros) / 1000 / statuses.length).toFixed(3)} ms per connection; proxy RSS +${((after.rss - before.rss) / 1024 / statuses.length).toFixed(1)} KiB per connection (${(after.rss / 1024 / 1024).toFixed(0)} MiB total in the proxy's process)`,
  );

  const throughputRatio = proxiedTls.medianMs / directTls.medianMs;
  const plainRatio = proxied10.medianMs / direct10.medianMs;
  const ttfbOverhead = proxiedSmall.medianMs - directSmall.medianMs;
  const line = (name: string, value: string, op: string, target: string, met: boolean) =>
    console.log(`target egress/${name}: ${value} ${op} ${target} ${met ? "met" : "MISSED"}`);
  line(
    "download_10mb_https",
    `${throughputRatio.toFixed(2)}x`,
    "<=",
    "1.3x",
    throughputRatio <= 1.3,
  );
  line("download_10mb_plain_http", `${plainRatio.toFixed(2)}x`, "<=", "1.3x", plainRatio <= 1.3);
  line("small_get_overhead", `${ttfbOverhead.toFixed(2)}ms`, "<=", "2ms", ttfbOverhead <= 2);
  line("concurrent_refused", `${refused}`, "==", "0", refused === 0);
  child.stdin.end();
  await new Promise((resolve) => child.once("exit", resolve));
} finally {
  await stack.stop();
  await net.close();
}
