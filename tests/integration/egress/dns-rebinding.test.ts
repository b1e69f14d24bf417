import { type ChildProcessByStdio, spawn } from "node:child_process";
import { writeFile } from "node:fs/promises";
import { createServer, type Server } from "node:net";
import { join } from "node:path";
import { createInterface } from "node:readline";
import type { Readable, Writable } from "node:stream";
import { afterAll, beforeAll, expect, test } from "vitest";
import type { EgressRecord } from "../../../agent-host/egress/egress-record.ts";
import { type DataRoot, freshDataRoot } from "../../support/data-root.ts";
import { type FakeDns, startFakeDns } from "../../support/fake-dns.ts";
import { type FakeInternet, startFakeInternet } from "../../support/fake-internet.ts";
import { pollUntil } from "../../support/poll-until.ts";
import { proxyConnect, proxyGet } from "./support/proxy-clients.ts";

// DNS rebinding (issue #34, decision 0116): a name whose address flips between a public
// one (the fake internet) and 127.0.0.1 on every lookup, served by a fake DNS server that
// counts lookups (conditions, not time). The proxy runs in a process of its own whose
// /etc/resolv.conf (in a private mount namespace) names that server, exactly as a node's
// would: it must resolve once per connection, check that answer and dial it, so a public
// answer is never followed by a dial of the private one, and a private answer is refused.

let net: FakeInternet;
let dns: FakeDns;
let root: DataRoot;
let child: ChildProcessByStdio<Writable, Readable, null>;
let socketPath: string;
let loopback: Server;
let loopbackConnections = 0;
let loopbackPort: number;
const audits: EgressRecord[] = [];
let name: string;

beforeAll(async () => {
  net = await startFakeInternet();
  name = net.name("rebind");
  // Odd lookups: the fake internet; even ones: loopback, where a listener counts any dial.
  dns = await startFakeDns(net.hostAddress, (asked, nth) =>
    asked === name ? (nth % 2 === 1 ? net.address : "127.0.0.1") : undefined,
  );
  loopback = createServer((socket) => {
    loopbackConnections += 1;
    socket.destroy();
  });
  await new Promise<void>((resolve) => loopback.listen(0, "127.0.0.1", resolve));
  loopbackPort = (loopback.address() as { port: number }).port;
  root = await freshDataRoot();
  const resolvConf = join(root.path, "resolv.conf");
  await writeFile(resolvConf, `nameserver ${net.hostAddress}\noptions timeout:2 attempts:1\n`);
  const script = new URL("./support/proxy-child.ts", import.meta.url).pathname;
  const args = JSON.stringify({ dir: root.path, allow: [name, `${name}:${loopbackPort}`] });
  // A private mount namespace: only this process sees the fake resolver.
  child = spawn(
    "unshare",
    [
      "--mount",
      "--propagation",
      "private",
      "sh",
      "-c",
      'mount --bind "$1" /etc/resolv.conf && exec "$2" "$3" "$4"',
      "sh",
      resolvConf,
      process.execPath,
      script,
      args,
    ],
    { stdio: ["pipe", "pipe", "inherit"] },
  );
  const ready = new Promise<string>((resolve, reject) => {
    child.once("exit", (code) => reject(new Error(`proxy child exited ${code}`)));
    createInterface({ input: child.stdout }).on("line", (line) => {
      const msg = JSON.parse(line) as { path?: string; audit?: EgressRecord };
      if (msg.path !== undefined) resolve(msg.path);
      if (msg.audit !== undefined) audits.push(msg.audit);
    });
  });
  socketPath = await ready;
}, 120_000);

afterAll(async () => {
  child?.stdin.end();
  loopback?.close();
  await dns?.close();
  await net?.close();
  await root?.remove();
});

test("a name that rebinds between lookups: one lookup per connection, the checked answer dialled, a private answer refused, loopback never reached", async () => {
  // Lookup 1 (public): served by the fake internet. A proxy that looked the name up again
  // to dial would have got 127.0.0.1 (lookup 2).
  const first = await proxyGet(socketPath, `http://${name}/first`);
  expect(first).toEqual({ status: 200, body: `hello from ${name} on 80\n` });
  // Lookup 2 (loopback): refused, nothing dialled.
  const second = await proxyGet(socketPath, `http://${name}/second`);
  expect(second.status).toBe(403);
  expect(JSON.parse(second.body).error.details.reason).toBe("private_address");
  // Lookup 3 (public) to the loopback listener's port: the fake internet has nothing there,
  // so the tunnel fails; a second lookup (4, loopback) would have reached the listener.
  const third = await proxyConnect(socketPath, `${name}:${loopbackPort}`);
  expect(third.status).not.toBe(200);
  // Lookup 4 (loopback) for the same port: refused before any dial.
  const fourth = await proxyConnect(socketPath, `${name}:${loopbackPort}`);
  expect(fourth.status).toBe(403);

  await pollUntil(() => audits.length === 4, { timeoutMs: 20_000, what: "four audit records" });
  expect(dns.queries(name)).toBe(4);
  // A forwarded request's record is written when its connection ends: compared as a set.
  const rows = (list: unknown[][]) => list.map((row) => JSON.stringify(row)).sort();
  expect(rows(audits.map((a) => [a.address, a.decision, a.reason]))).toEqual(
    rows([
      [net.address, "allowed", null],
      ["127.0.0.1", "denied", "private_address"],
      // The checked (public) address was dialled and refused by the fake internet.
      [net.address, "denied", "upstream_failed"],
      ["127.0.0.1", "denied", "private_address"],
    ]),
  );
  expect(loopbackConnections).toBe(0);
  expect((await net.seen()).map((s) => s.path)).toEqual(["/first"]);
});
