// The cost of brokering a secret (issue #35, decision 0133): time to the first byte of an
// HTTPS answer from a host a secret binds (the proxy terminates TLS with the deployment
// CA, swaps the header, re-originates TLS verifying the server) against the same request
// through an unbound CONNECT tunnel to the same server. Each sample is a new connection
// (what curl or git does per command). Needs root (the fake internet is a network namespace).

import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { readFile } from "node:fs/promises";
import { request } from "node:http";
import { createInterface } from "node:readline";
import type { Duplex } from "node:stream";
import { connect as tlsConnect } from "node:tls";
import { putNetworkOverride } from "../../shared/network/network-policy-store.ts";
import { createEnvKeyWrapper } from "../../shared/secrets/secret-envelope.ts";
import { putSecret } from "../../shared/secrets/secret-store.ts";
import { startFakeInternet } from "../support/fake-internet.ts";
import { startBenchStack } from "./bench-stack.ts";
import { benchTargets, interleaved, report } from "./measure.ts";

const targets = benchTargets("secrets", [
  { measure: "bound_https_ttfb_vs_tunnel", op: "<=", target: 1.5 },
]);

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

/** CONNECT, TLS, one GET: resolves at the first byte of the answer (then closes). */
async function firstByte(via: string, host: string, ca: string, auth: string): Promise<void> {
  const socket = await tunnel(via, `${host}:443`);
  await new Promise<void>((resolve, reject) => {
    const tls = tlsConnect({ socket, servername: host, ca }, () =>
      tls.write(
        `GET /hello HTTP/1.1\r\nhost: ${host}\r\nauthorization: Bearer ${auth}\r\nconnection: close\r\n\r\n`,
      ),
    );
    tls.once("data", (chunk: Buffer) => {
      tls.destroy();
      // A refusal is a first byte too: only a 200 counts as a sample.
      const status = chunk.toString("latin1", 0, 12);
      if (status === "HTTP/1.1 200") resolve();
      else reject(new Error(`answered ${status}`));
    });
    tls.on("error", reject);
  });
}

const net = await startFakeInternet();
const stack = await startBenchStack({ maxConnections: 10 });
try {
  const bound = net.name("api");
  const unbound = net.name("allowed");
  await net.addHosts([
    [bound, net.address],
    [unbound, net.address],
  ]);
  await putNetworkOverride(stack.db, "bench", { mode: "allowlist", allow: [bound, unbound] });
  const key = randomBytes(32);
  await putSecret(stack.db, createEnvKeyWrapper(key), "bench", "BENCH_TOKEN", {
    value: `ghp_${randomBytes(20).toString("hex")}`,
    hosts: [bound],
    header: "Authorization",
    template: "Bearer {value}",
  });
  const child = spawn(
    process.execPath,
    [
      new URL("./secrets-proxy-child.ts", import.meta.url).pathname,
      JSON.stringify({
        dbUrl: stack.url,
        dir: stack.dataRoot,
        keyBase64: key.toString("base64"),
        upstreamCaPath: net.certPath,
        uid: "bench",
      }),
    ],
    { stdio: ["pipe", "pipe", "inherit"] },
  );
  const lines = createInterface({ input: child.stdout });
  const { path, placeholder, caPem } = JSON.parse(
    await new Promise<string>((resolve) => lines.once("line", resolve)),
  ) as { path: string; placeholder: string; caPem: string };
  const fakeCa = await readFile(net.certPath, "utf8");
  // One warm-up each (the leaf for the bound name is minted once per node).
  await firstByte(path, bound, caPem, placeholder);
  await firstByte(path, unbound, fakeCa, placeholder);
  const [tunnelled, brokered] = await interleaved(
    [
      [
        "unbound CONNECT tunnel, TLS end to end (baseline)",
        () => firstByte(path, unbound, fakeCa, "none"),
      ],
      [
        "bound host: TLS terminated, header swapped, TLS re-originated",
        () => firstByte(path, bound, caPem, placeholder),
      ],
    ],
    100,
  );
  if (tunnelled === undefined || brokered === undefined) throw new Error("no samples");
  report("HTTPS time to first byte, new connection each", tunnelled, [brokered]);
  targets.record("bound_https_ttfb_vs_tunnel", brokered.medianMs / tunnelled.medianMs);
  child.stdin.end();
  await new Promise((resolve) => child.once("exit", resolve));
} finally {
  await stack.stop();
  await net.close();
}
