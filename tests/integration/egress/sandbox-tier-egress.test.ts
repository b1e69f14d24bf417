import { execFile } from "node:child_process";
import { mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createAddressGuard } from "../../../agent-host/egress/address-guard.ts";
import { createEgressProxy, type EgressProxy } from "../../../agent-host/egress/egress-proxy.ts";
import type { EgressRecord } from "../../../agent-host/egress/egress-record.ts";
import { createDb, type Db } from "../../../shared/db/client.ts";
import { NO_NETWORK } from "../../../shared/network/network-policy.ts";
import {
  findNetworkCeiling,
  putNetworkOverride,
} from "../../../shared/network/network-policy-store.ts";
import { type DataRoot, freshDataRoot } from "../../support/data-root.ts";
import { type FakeInternet, startFakeInternet } from "../../support/fake-internet.ts";
import { freshDatabase, type TestDatabase } from "../../support/postgres.ts";
import { materializeWorkdir } from "../sandbox/sandbox-fixture.ts";
import { type TierSandboxes, tierSandboxes } from "./support/tier-sandboxes.ts";

// Both tiers reaching the egress proxy, one suite (issue #34, decision 0117): real
// bubblewrap sandboxes and Docker containers with only `lo`, the proxy's socket placed
// where each tier sees it (the generation's /tmp; the container's read-only egress
// directory), the relay (python3 of the Runtime Assets) on 127.0.0.1:3128, the proxy
// variables; and the fake internet in its own network namespace, whose servers count what
// reached them.

const run = promisify(execFile);

let net: FakeInternet;
let database: TestDatabase;
let db: Db;
let dataRoot: DataRoot;
let proxy: EgressProxy;
const records: EgressRecord[] = [];

const n = (label: string) => net.name(label);

/** Python's urllib (what pip uses underneath), printing the status or the error's class. */
const urllib = (url: string, extra = "") =>
  `python3 - <<'PY'
import os, ssl, sys, urllib.request, urllib.error
ctx = ssl.create_default_context(cadata=os.environ["FAKE_CA"]) if "${url}".startswith("https") else None
try:
    r = urllib.request.urlopen("${url}", timeout=10, context=ctx)
    print(r.status, r.read().decode().strip())
except urllib.error.HTTPError as e:
    print(e.code, e.read().decode())
except Exception as e:
    print("error", type(e).__name__)
${extra}
PY
`;

const rawSocket = (host: string, port: number) =>
  `python3 -c "import socket
try:
    socket.create_connection(('${host}', ${port}), timeout=5); print('connected')
except Exception as e:
    print('refused', type(e).__name__)"`;

/** A bare git repository with one commit, served over git's "dumb" HTTP protocol. */
async function gitRepository(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "wc-fake-git-"));
  const git = (...args: string[]) => run("git", args, { cwd: dir, timeout: 30_000 });
  await git("init", "-q", "work");
  await writeFile(join(dir, "work", "README"), "hello through the proxy\n");
  await git("-C", "work", "add", "README");
  await git("-C", "work", "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "init");
  await git("clone", "-q", "--bare", "work", "repo.git");
  await git("-C", "repo.git", "update-server-info");
  return dir;
}

let gitDir: string;

beforeAll(async () => {
  gitDir = await gitRepository();
  net = await startFakeInternet({ staticDir: gitDir });
  database = await freshDatabase();
  db = createDb(database.sql);
  dataRoot = await freshDataRoot();
  await net.addHosts([
    [n("allowed"), net.address],
    [n("denied"), net.address],
    [n("loopback"), "127.0.0.1"],
    [n("metadata"), "169.254.169.254"],
  ]);
  await putNetworkOverride(db, "alice", {
    mode: "allowlist",
    allow: [n("allowed"), n("loopback"), n("metadata"), `${n("loopback")}:8080`],
  });
  proxy = createEgressProxy({
    ceiling: (uid) => findNetworkCeiling(db, uid, NO_NETWORK),
    guard: createAddressGuard(),
    audit: (record) => records.push(record),
  });
  for (const uid of ["alice", "bob"]) await materializeWorkdir(dataRoot.path, uid, "work");
}, 180_000);

afterAll(async () => {
  await proxy?.close();
  await net?.close();
  await database?.drop();
  await dataRoot?.remove();
  await rm(gitDir, { recursive: true, force: true });
});

describe.each(["process", "container"] as const)("egress (%s tier)", (tier) => {
  let boxes: TierSandboxes;
  const sh = (uid: string, script: string, env?: Record<string, string>) =>
    boxes.sh(uid, script, env);
  const withEgress = <T>(uid: string, use: (env: Record<string, string>) => Promise<T>) =>
    boxes.withEgress(uid, use);
  const place = (uid: string) => boxes.place(uid);

  beforeAll(async () => {
    boxes = await tierSandboxes({ tier, dataRoot: dataRoot.path, proxy, uids: ["alice", "bob"] });
  }, 180_000);

  afterAll(async () => {
    await boxes?.close();
  });

  test("policy none: no socket, no variables, and nothing reaches the fake internet by any client", async () => {
    await net.resetSeen();
    const r = await sh(
      "alice",
      `env | grep -ic proxy; ls -A /tmp | grep -c workcell-egress\n${urllib(`http://${n("allowed")}/`)}\n${rawSocket(net.address, 80)}; node -e "fetch('http://${net.address}/').then(()=>console.log('fetched'),()=>console.log('fetch failed'))"; git ls-remote http://${n("allowed")}/static/repo.git >/dev/null 2>&1 || echo git-failed`,
    );
    expect(r.out).toBe("0\n0\nerror URLError\nrefused OSError\nfetch failed\ngit-failed\n");
    expect(await net.seen()).toEqual([]);
  });

  test("allow-list: HTTP and HTTPS through the relay reach the allowed host; a denied name gets 403 with the reason; the server saw only the allowed", async () => {
    const ca = await readFile(net.certPath, "utf8");
    await net.resetSeen();
    const r = await withEgress("alice", (env) =>
      sh(
        "alice",
        `${urllib(`http://${n("allowed")}/plain`)}${urllib(`https://${n("allowed")}/tls`)}${urllib(`http://${n("denied")}/`)}d=$(mktemp -d) && git clone -q http://${n("allowed")}/static/repo.git "$d/clone" && cat "$d/clone/README"; git clone -q http://${n("denied")}/static/repo.git "$d/denied" 2>/dev/null || echo denied-clone-failed`,
        { ...env, FAKE_CA: ca },
      ),
    );
    const lines = r.out.trim().split("\n");
    expect(lines[0]).toBe(`200 hello from ${n("allowed")} on 80`);
    expect(lines[1]).toBe(`200 hello from ${n("allowed")} on 443`);
    expect(lines[2]).toMatch(/^403 /);
    expect(JSON.parse(lines[2]?.slice(4) ?? "{}").error.details).toMatchObject({
      reason: "not_in_policy",
      host: n("denied"),
    });
    // git clone over HTTP through the proxy (git reads http_proxy), and not from the denied name.
    expect(lines[3]).toBe("hello through the proxy");
    expect(lines[4]).toBe("denied-clone-failed");
    const seen = await net.seen();
    expect(seen.slice(0, 2).map((s) => [s.port, s.host])).toEqual([
      [80, n("allowed")],
      [443, n("allowed")],
    ]);
    expect(seen.every((s) => s.host === n("allowed"))).toBe(true);
  });

  test("bypass attempts are refused and deliver nothing", async () => {
    await net.resetSeen();
    const r = await withEgress("alice", (env) =>
      sh(
        "alice",
        [
          // The proxy ignored: there is no route.
          rawSocket(net.address, 80),
          `unset HTTP_PROXY http_proxy HTTPS_PROXY https_proxy ALL_PROXY all_proxy\n${urllib(`http://${n("allowed")}/`)}export http_proxy=$HTTP_PROXY_SAVED`,
          // Allowed names that point inside, and literals, through the proxy.
          urllib(`http://${n("loopback")}:8080/`),
          urllib(`http://${n("metadata")}/latest/meta-data/`),
          urllib("http://127.0.0.1:8080/"),
          urllib("http://169.254.169.254/"),
          // CONNECT to a loopback literal, by hand through the relay.
          `python3 -c "import socket
s = socket.create_connection(('127.0.0.1', 3128)); s.sendall(b'CONNECT 127.0.0.1:8080 HTTP/1.1\\r\\nHost: ${n("allowed")}:443\\r\\n\\r\\n'); print(s.recv(200).split(b'\\r\\n')[0].decode())"`,
        ].join("\n"),
        { ...env, HTTP_PROXY_SAVED: env.HTTP_PROXY ?? "" },
      ),
    );
    const lines = r.out.trim().split("\n");
    expect(lines[0]).toBe("refused OSError");
    expect(lines[1]).toBe("error URLError");
    const reason = (line: string | undefined) =>
      JSON.parse(line?.slice(4) ?? "{}").error?.details?.reason as string | undefined;
    expect([lines[2], lines[3], lines[5]].map(reason)).toEqual([
      "private_address",
      "private_address",
      "ip_literal",
    ]);
    // 127.0.0.1 is in NO_PROXY: the client goes to the sandbox's own loopback, where
    // nothing listens (its network namespace is its own), never to the node's.
    expect(lines[4]).toBe("error URLError");
    expect(lines[6]).toBe("HTTP/1.1 403 Forbidden");
    expect(await net.seen()).toEqual([]);
  });

  test("another sandbox's socket is not reachable, and its tenant's policy is its own", async () => {
    await withEgress("bob", async (bobEnv) => {
      const bobSocket = bobEnv.WORKCELL_EGRESS_SOCKET ?? "";
      // Bob's socket does not exist in alice's sandbox (its /tmp is alice's own).
      const fromAlice = await withEgress("alice", (env) =>
        sh("alice", `test -e ${bobSocket} && echo visible || echo absent`, env),
      );
      expect(fromAlice.out).toBe("absent\n");
      // Bob's policy is none: through his own socket alice's host is refused.
      await net.resetSeen();
      const fromBob = await sh("bob", urllib(`http://${n("allowed")}/`), bobEnv);
      expect(fromBob.out).toMatch(/^403 /);
      expect(JSON.parse(fromBob.out.slice(4)).error.details.reason).toBe("not_in_policy");
      expect(await net.seen()).toEqual([]);
    });
    // Every socket directory is gone with its listener.
    expect(
      (await readdir(place("alice").hostDir)).filter((e) => e.startsWith(".workcell-egress-")),
    ).toEqual([]);
  });
});
