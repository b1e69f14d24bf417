import { readFile, stat } from "node:fs/promises";
import { connect, createServer, type Server } from "node:net";
import { dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createAddressGuard } from "../../../agent-host/egress/address-guard.ts";
import { createEgressProxy, type EgressProxy } from "../../../agent-host/egress/egress-proxy.ts";
import type { EgressRecord } from "../../../agent-host/egress/egress-record.ts";
import type { EgressSandbox } from "../../../agent-host/egress/egress-sandbox.ts";
import { networkRequestEventData } from "../../../agent-host/egress/run-egress.ts";
import { runEventSchema } from "../../../shared/contracts/run-event.ts";
import { createDb, type Db } from "../../../shared/db/client.ts";
import { NO_NETWORK } from "../../../shared/network/network-policy.ts";
import {
  findNetworkCeiling,
  putNetworkOverride,
} from "../../../shared/network/network-policy-store.ts";
import { type DataRoot, freshDataRoot } from "../../support/data-root.ts";
import { type FakeInternet, startFakeInternet } from "../../support/fake-internet.ts";
import { freshDatabase, type TestDatabase } from "../../support/postgres.ts";
import {
  echo,
  httpsOverTunnel,
  proxyConnect,
  proxyDownload,
  proxyGet,
  socksConnect,
} from "./support/proxy-clients.ts";

// The egress proxy against a fake internet in a network namespace (issue #34, decision
// 0116): the policy from Postgres per connection, the always-denied address classes, the
// protocols (plain HTTP, CONNECT, SOCKS5), the bounds, and that a refusal delivers nothing.

let net: FakeInternet;
let database: TestDatabase;
let db: Db;
let proxy: EgressProxy;
let root: DataRoot;
const records: EgressRecord[] = [];
let loopback: Server;
let loopbackConnections = 0;

const n = (label: string) => net.name(label);
const sandbox = (uid: string, id: string, runAllow?: string[]): EgressSandbox => ({
  uid,
  runId: `00000000-0000-4000-8000-${id.padStart(12, "0")}`,
  sandboxId: `sbx-${id}`,
  generation: 1,
  ...(runAllow === undefined ? {} : { runAllow }),
});

beforeAll(async () => {
  net = await startFakeInternet();
  database = await freshDatabase();
  db = createDb(database.sql);
  root = await freshDataRoot();
  loopback = createServer((socket) => {
    loopbackConnections += 1;
    socket.destroy();
  });
  await new Promise<void>((resolve) => loopback.listen(0, "127.0.0.1", resolve));
  const loopbackPort = (loopback.address() as { port: number }).port;
  await net.addHosts([
    [n("allowed"), net.address],
    [n("denied"), net.address],
    [n("loopback"), "127.0.0.1"],
    [n("private"), "10.1.2.3"],
    [n("metadata"), "169.254.169.254"],
    [n("node"), net.hostAddress],
    [n("mixed"), net.address],
    [n("mixed"), "127.0.0.1"],
  ]);
  await putNetworkOverride(db, "alice", {
    mode: "allowlist",
    allow: [
      n("allowed"),
      `${n("allowed")}:22`,
      `${n("loopback")}:${loopbackPort}`,
      n("loopback"),
      n("private"),
      n("metadata"),
      n("node"),
      n("mixed"),
    ],
  });
  await putNetworkOverride(db, "bob", { mode: "allowlist", allow: [n("denied")] });
  proxy = createEgressProxy({
    ceiling: (uid) => findNetworkCeiling(db, uid, NO_NETWORK),
    guard: createAddressGuard(),
    audit: (record) => records.push(record),
  });
}, 120_000);

afterAll(async () => {
  await proxy?.close();
  loopback?.close();
  await net?.close();
  await database?.drop();
  await root?.remove();
});

const recordsOf = (s: EgressSandbox) => records.filter((r) => r.sandbox.runId === s.runId);
const seenHosts = async () => (await net.seen()).map((s) => s.host?.replace(/:\d+$/, ""));

describe("egress proxy", () => {
  test("allowed: plain HTTP and HTTPS through CONNECT reach the host; each connection is one record", async () => {
    const alice = sandbox("alice", "1");
    const notified: EgressRecord[] = [];
    const egress = await proxy.open(alice, 10_000_000, root.path, (r) => notified.push(r));
    await net.resetSeen();
    const plain = await proxyGet(egress.listenPath, `http://${n("allowed")}/hello`);
    expect(plain).toEqual({ status: 200, body: `hello from ${n("allowed")} on 80\n` });
    const tunnel = await proxyConnect(egress.listenPath, `${n("allowed")}:443`);
    expect(tunnel.status).toBe(200);
    if (tunnel.socket === undefined) throw new Error("no tunnel");
    const ca = await readFile(net.certPath, "utf8");
    expect(await httpsOverTunnel(tunnel.socket, n("allowed"), ca)).toContain(
      `hello from ${n("allowed")} on 443`,
    );
    await expect.poll(() => recordsOf(alice).length).toBe(2);
    expect(recordsOf(alice).map((r) => [r.protocol, r.decision, r.address, r.port])).toEqual([
      ["http", "allowed", net.address, 80],
      ["connect", "allowed", net.address, 443],
    ]);
    // The run's own hook gets the same records, as valid `network.request` events.
    expect(notified).toEqual(recordsOf(alice));
    for (const record of notified) {
      const event = {
        seq: 1,
        run_id: alice.runId,
        created_at: "2026-01-01T00:00:00.000Z",
        type: "network.request",
        data: networkRequestEventData(record),
      };
      expect(runEventSchema.parse(event)).toEqual(event);
    }
    // Plain HTTP counts bodies (a GET sends none); a tunnel counts every byte either way.
    expect(recordsOf(alice).map((r) => [r.bytesUp > 0, r.bytesDown > 0])).toEqual([
      [false, true],
      [true, true],
    ]);
    // The socket sits in a fresh directory of agent-host's inside the given one, named
    // there as `relativePath`, connectable by others, and gone with its listener.
    const onDisk = join(root.path, egress.relativePath);
    expect((await stat(onDisk)).isSocket()).toBe(true);
    expect((await stat(onDisk)).mode & 0o777).toBe(0o666);
    expect((await stat(dirname(onDisk))).mode & 0o777).toBe(0o755);
    await egress.close();
    await expect(stat(dirname(onDisk))).rejects.toThrow(/ENOENT/);
  });

  test("a name outside the policy (same address) gets 403 naming host, reason and who can change it; the server sees nothing", async () => {
    const alice = sandbox("alice", "2");
    const egress = await proxy.open(alice, 10_000_000, root.path);
    await net.resetSeen();
    const plain = await proxyGet(egress.listenPath, `http://${n("denied")}/`);
    expect(plain.status).toBe(403);
    expect(JSON.parse(plain.body)).toMatchObject({
      error: {
        code: "forbidden",
        details: { reason: "not_in_policy", host: n("denied"), port: 80, changed_by: "admin" },
      },
    });
    const tunnel = await proxyConnect(egress.listenPath, `${n("denied")}:443`);
    expect(tunnel.status).toBe(403);
    expect(tunnel.body).toContain("not_in_policy");
    // A port the pattern does not name is outside it too.
    expect((await proxyConnect(egress.listenPath, `${n("allowed")}:8443`)).status).toBe(403);
    expect(await net.seen()).toEqual([]);
    await expect.poll(() => recordsOf(alice).length).toBe(3);
    expect(recordsOf(alice).every((r) => r.decision === "denied")).toBe(true);
    await egress.close();
  });

  test("always denied, whatever the allow-list: loopback, RFC 1918, metadata, the node's own address, a name with one private answer, IP literals", async () => {
    const alice = sandbox("alice", "3");
    const egress = await proxy.open(alice, 10_000_000, root.path);
    await net.resetSeen();
    const loopbackPort = (loopback.address() as { port: number }).port;
    const cases: [string, string][] = [
      [`${n("loopback")}:${loopbackPort}`, "private_address"],
      [`${n("loopback")}:443`, "private_address"],
      [`${n("private")}:443`, "private_address"],
      [`${n("metadata")}:80`, "private_address"],
      [`${n("node")}:443`, "node_address"],
      [`${n("mixed")}:443`, "private_address"],
      ["127.0.0.1:8080", "ip_literal"],
      [`${net.address}:443`, "ip_literal"],
      ["[::1]:443", "ip_literal"],
      ["169.254.169.254:80", "ip_literal"],
    ];
    for (const [authority, reason] of cases) {
      const answer = await proxyConnect(egress.listenPath, authority);
      expect(answer.status, authority).toBe(403);
      expect(JSON.parse(answer.body).error.details.reason, authority).toBe(reason);
    }
    const metadata = await proxyGet(egress.listenPath, "http://169.254.169.254/latest/meta-data/");
    expect(metadata.status).toBe(403);
    const plainLiteral = await proxyGet(egress.listenPath, `http://${net.address}/`);
    expect(JSON.parse(plainLiteral.body).error.details.reason).toBe("ip_literal");
    // SOCKS: an address (ATYP 1) and a name resolving inside are refused (reply 2).
    expect((await socksConnect(egress.listenPath, "10.0.0.1", 443)).code).toBe(2);
    expect((await socksConnect(egress.listenPath, n("private"), 443)).code).toBe(2);
    expect((await socksConnect(egress.listenPath, "127.0.0.1", loopbackPort)).code).toBe(2);
    expect(loopbackConnections).toBe(0);
    expect(await net.seen()).toEqual([]);
    await egress.close();
  });

  test("SOCKS5 to an allowed name:port reaches the TCP service; HTTP and SOCKS share the one socket", async () => {
    const alice = sandbox("alice", "4");
    const egress = await proxy.open(alice, 10_000_000, root.path);
    const granted = await socksConnect(egress.listenPath, n("allowed"), 22);
    expect(granted.code).toBe(0);
    expect(await echo(granted.socket, "ssh-2.0-probe\n")).toBe("ssh-2.0-probe\n");
    await expect.poll(() => recordsOf(alice).length).toBe(1);
    expect(recordsOf(alice)[0]).toMatchObject({
      protocol: "socks5",
      decision: "allowed",
      port: 22,
    });
    await egress.close();
  });

  test("the Host header cannot redirect a request: the upstream's Host is the checked URL's", async () => {
    const alice = sandbox("alice", "5");
    const egress = await proxy.open(alice, 10_000_000, root.path);
    await net.resetSeen();
    const smuggled = await proxyGet(egress.listenPath, `http://${n("allowed")}/x`, {
      host: n("denied"),
    });
    expect(smuggled.body).toBe(`hello from ${n("allowed")} on 80\n`);
    const reverse = await proxyGet(egress.listenPath, `http://${n("denied")}/x`, {
      host: n("allowed"),
    });
    expect(reverse.status).toBe(403);
    // Origin-form (not a proxy request) is refused, whatever its Host says.
    const origin = await proxyGet(egress.listenPath, "/x", { host: n("allowed") });
    expect(origin.status).toBe(400);
    expect(await seenHosts()).toEqual([n("allowed")]);
    await egress.close();
  });

  test("one plain-HTTP request per connection: its body is sent exactly, a pipelined next request (to another host) never is", async () => {
    const alice = sandbox("alice", "12");
    const egress = await proxy.open(alice, 10_000_000, root.path);
    await net.resetSeen();
    const reply = await new Promise<string>((resolve, reject) => {
      const socket = connect(egress.listenPath);
      const chunks: Buffer[] = [];
      socket.on("data", (chunk: Buffer) => chunks.push(chunk));
      socket.on("close", () => resolve(Buffer.concat(chunks).toString()));
      socket.on("error", reject);
      // Written, not ended: the answer comes on the open connection, which the proxy closes.
      socket.write(
        `POST http://${n("allowed")}/first HTTP/1.1\r\nHost: ${n("allowed")}\r\nContent-Length: 5\r\n\r\nhelloGET http://${n("denied")}/second HTTP/1.1\r\nHost: ${n("denied")}\r\n\r\n`,
      );
    });
    expect(reply).toMatch(/^HTTP\/1\.1 200 /);
    expect(reply).not.toContain(n("denied"));
    expect((await net.seen()).map((s) => [s.method, s.host, s.path])).toEqual([
      ["POST", n("allowed"), "/first"],
    ]);
    await expect.poll(() => recordsOf(alice).length).toBe(1);
    expect(recordsOf(alice)[0]).toMatchObject({ host: n("allowed"), bytesUp: 5 });
    await egress.close();
  });

  test("tenants: bob's sandbox never gets alice's hosts, and alice's run narrowing holds", async () => {
    const bob = await proxy.open(sandbox("bob", "6"), 10_000_000, root.path);
    const narrowed = await proxy.open(
      sandbox("alice", "7", [`${n("allowed")}:22`]),
      10_000_000,
      root.path,
    );
    await net.resetSeen();
    expect((await proxyConnect(bob.listenPath, `${n("allowed")}:443`)).status).toBe(403);
    expect((await proxyGet(narrowed.listenPath, `http://${n("allowed")}/`)).status).toBe(403);
    expect(await net.seen()).toEqual([]);
    expect(bob.listenPath).not.toBe(narrowed.listenPath);
    await bob.close();
    await narrowed.close();
  });

  test("an admin's revocation applies to the next connection of a sandbox already open", async () => {
    await putNetworkOverride(db, "carol", { mode: "allowlist", allow: [n("allowed")] });
    const egress = await proxy.open(sandbox("carol", "8"), 10_000_000, root.path);
    expect((await proxyGet(egress.listenPath, `http://${n("allowed")}/`)).status).toBe(200);
    await putNetworkOverride(db, "carol", { mode: "none", allow: [] });
    await net.resetSeen();
    const after = await proxyGet(egress.listenPath, `http://${n("allowed")}/`);
    expect(after.status).toBe(403);
    expect(await net.seen()).toEqual([]);
    await egress.close();
  });

  test("bytes past egress_bytes_per_run cut the connection and the record says why", async () => {
    const alice = sandbox("alice", "9");
    const egress = await proxy.open(alice, 200_000, root.path);
    const received = await proxyDownload(egress.listenPath, `http://${n("allowed")}/bytes/5000000`);
    expect(received).toBeLessThanOrEqual(200_000);
    await expect.poll(() => recordsOf(alice).length).toBe(1);
    expect(recordsOf(alice)[0]).toMatchObject({
      decision: "allowed",
      reason: "egress_bytes_per_run",
    });
    // The budget is the run's: the next connection of the run is cut at once too.
    const tunnel = await proxyConnect(egress.listenPath, `${n("allowed")}:443`);
    if (tunnel.socket !== undefined) {
      const ca = await readFile(net.certPath, "utf8");
      const answer = await httpsOverTunnel(tunnel.socket, n("allowed"), ca).catch(() => "");
      expect(answer).toBe("");
    }
    expect(recordsOf(alice).at(-1)).toMatchObject({ reason: "egress_bytes_per_run" });
    await egress.close();
  });

  test("connections per sandbox are bounded at accept; another tenant is still served", async () => {
    const bounded = createEgressProxy({
      ceiling: (uid) => findNetworkCeiling(db, uid, NO_NETWORK),
      guard: createAddressGuard(),
      audit: () => {},
      limits: { maxConnectionsPerSandbox: 3 },
    });
    const greedy = await bounded.open(sandbox("alice", "10"), 10_000_000, root.path);
    const other = await bounded.open(sandbox("alice", "11"), 10_000_000, root.path);
    const held = [];
    for (let i = 0; i < 3; i++) {
      const tunnel = await proxyConnect(greedy.listenPath, `${n("allowed")}:443`);
      expect(tunnel.status).toBe(200);
      held.push(tunnel.socket);
    }
    await expect(proxyConnect(greedy.listenPath, `${n("allowed")}:443`)).rejects.toThrow();
    expect((await proxyGet(other.listenPath, `http://${n("allowed")}/`)).status).toBe(200);
    for (const socket of held) socket?.destroy();
    await bounded.close();
  });
});
