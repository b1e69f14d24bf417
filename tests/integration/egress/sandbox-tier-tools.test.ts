import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
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
import { type FakeSshd, startFakeSshd } from "../../support/fake-sshd.ts";
import { freshDatabase, type TestDatabase } from "../../support/postgres.ts";
import { writeTinyWheelIndex } from "../../support/tiny-wheel.ts";
import { materializeWorkdir } from "../sandbox/sandbox-fixture.ts";
import { type TierSandboxes, tierSandboxes } from "./support/tier-sandboxes.ts";

// The network tools of the Runtime Assets through the egress proxy, in both tiers, one
// suite (issue #34): curl (HTTP and HTTPS), `pip install` into a venv from a package index
// on the fake internet (a wheel built here: no real index), ssh (openssh-client) with a
// ProxyCommand of socat's PROXY: (CONNECT) to Debian's sshd on the fake internet; and each
// of them from a denied name or with no network, refused with nothing reaching a server.

let net: FakeInternet;
let sshd: FakeSshd;
let database: TestDatabase;
let db: Db;
let dataRoot: DataRoot;
let proxy: EgressProxy;
let staticDir: string;
const records: EgressRecord[] = [];
const n = (label: string) => net.name(label);

beforeAll(async () => {
  staticDir = await mkdtemp(join(tmpdir(), "wc-fake-index-"));
  await writeTinyWheelIndex(staticDir, "wcdemo", "installed through the proxy");
  net = await startFakeInternet({ staticDir });
  sshd = await startFakeSshd(net);
  database = await freshDatabase();
  db = createDb(database.sql);
  dataRoot = await freshDataRoot();
  await net.addHosts([
    [n("allowed"), net.address],
    [n("denied"), net.address],
  ]);
  await putNetworkOverride(db, "alice", {
    mode: "allowlist",
    allow: [n("allowed"), `${n("allowed")}:${sshd.port}`],
  });
  proxy = createEgressProxy({
    ceiling: (uid) => findNetworkCeiling(db, uid, NO_NETWORK),
    guard: createAddressGuard(),
    audit: (record) => records.push(record),
  });
  await materializeWorkdir(dataRoot.path, "alice", "work");
}, 180_000);

afterAll(async () => {
  await proxy?.close();
  await sshd?.close();
  await net?.close();
  await database?.drop();
  await dataRoot?.remove();
  await rm(staticDir, { recursive: true, force: true });
});

/** curl printing `<status> <body>`, or `curl-exit <code>` when it got no answer. */
const curl = (url: string) =>
  `b=$(curl -sS --max-time 20 --cacert "$d/ca.pem" -w ' %{http_code}' ${url} 2>/dev/null); c=$?; if [ $c -eq 0 ]; then echo "\${b##* } \${b% *}" | tr -d '\\n'; echo; else echo "curl-exit $c"; fi`;

const pipInstall = (host: string, pkg: string) =>
  `"$d/v/bin/pip" install --no-cache-dir --disable-pip-version-check --retries 0 --timeout 20 --cert "$d/ca.pem" --index-url https://${host}/simple/ ${pkg} >"$d/pip.log" 2>&1 && echo pip-ok || echo pip-failed`;

/** ssh through socat's PROXY: (an HTTP CONNECT through the relay), key login, batch mode. */
const ssh = (host: string) =>
  `ssh -F /dev/null -i "$d/key" -p ${sshd.port} -o BatchMode=yes -o ConnectTimeout=20 -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR -o ProxyCommand='socat - PROXY:127.0.0.1:%h:%p,proxyport=\${WORKCELL_EGRESS_PORT:-3128}' root@${host} 2>"$d/ssh.log" || echo ssh-failed`;

/**
 * Writes the fake CA and the ssh key into a fresh directory `$d` of the sandbox's workdir
 * (where an agent makes its venv: a sandbox's /tmp is a small tmpfs, too small for one).
 */
const setup = `d=$(mktemp -d -p "$PWD") && printf '%s' "$FAKE_CA" >"$d/ca.pem" && printf '%s' "$SSH_KEY" >"$d/key" && chmod 600 "$d/key"\n`;

describe.each(["process", "container"] as const)("network tools (%s tier)", (tier) => {
  let boxes: TierSandboxes;
  let secrets: Record<string, string>;

  beforeAll(async () => {
    boxes = await tierSandboxes({ tier, dataRoot: dataRoot.path, proxy, uids: ["alice"] });
    secrets = { FAKE_CA: await readFile(net.certPath, "utf8"), SSH_KEY: sshd.clientKey };
  }, 240_000);

  afterAll(async () => {
    await boxes?.close();
  });

  test("curl, pip and ssh with policy none fail at once and reach no server", async () => {
    await net.resetSeen();
    const before = await sshd.connections();
    const r = await boxes.sh(
      "alice",
      `${setup}${curl(`http://${n("allowed")}/`)}\npython3 -m venv "$d/v" && echo venv-ok && ${pipInstall(n("allowed"), "wcdemo")}\n${ssh(n("allowed"))}`,
      secrets,
    );
    // Without the relay's variables (the env here is only the test's): no proxy, no route.
    expect(r.out.trim().split("\n")).toEqual([
      "curl-exit 6",
      "venv-ok",
      "pip-failed",
      "ssh-failed",
    ]);
    expect(await net.seen()).toEqual([]);
    expect(await sshd.connections()).toBe(before);
  }, 180_000);

  test("curl over HTTP and HTTPS reaches the allowed host; the denied name is refused (403, or no tunnel) and never reached", async () => {
    await net.resetSeen();
    const r = await boxes.withEgress("alice", (env) =>
      boxes.sh(
        "alice",
        [
          setup,
          curl(`http://${n("allowed")}/plain`),
          curl(`https://${n("allowed")}/tls`),
          curl(`http://${n("denied")}/`),
          curl(`https://${n("denied")}/`),
        ].join("\n"),
        { ...env, ...secrets },
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
    // curl's "CONNECT tunnel failed" (56): the 403 came instead of a tunnel.
    expect(lines[3]).toBe("curl-exit 56");
    expect((await net.seen()).map((s) => [s.port, s.host, s.path])).toEqual([
      [80, n("allowed"), "/plain"],
      [443, n("allowed"), "/tls"],
    ]);
  }, 180_000);

  test("Node 24's own fetch goes through the proxy (NODE_USE_ENV_PROXY) to the allowed host; the denied name is refused and never reached", async () => {
    await net.resetSeen();
    const fetchJs = (url: string) =>
      `node -e "fetch('${url}').then(async (r) => console.log(r.status, (await r.text()).trim()), () => console.log('fetch-failed'))"`;
    const r = await boxes.withEgress("alice", (env) =>
      boxes.sh(
        "alice",
        [
          setup,
          `node -p "process.versions.node.split('.')[0]"`,
          `NODE_EXTRA_CA_CERTS="$d/ca.pem" ${fetchJs(`https://${n("allowed")}/node`)}`,
          `NODE_EXTRA_CA_CERTS="$d/ca.pem" ${fetchJs(`https://${n("denied")}/`)}`,
        ].join("\n"),
        { ...env, ...secrets },
      ),
    );
    expect(r.out.trim().split("\n"), r.err).toEqual([
      "24",
      `200 hello from ${n("allowed")} on 443`,
      "fetch-failed",
    ]);
    expect((await net.seen()).map((s) => [s.port, s.host, s.path])).toEqual([
      [443, n("allowed"), "/node"],
    ]);
  }, 180_000);

  test("pip installs a package into a venv from the fake index over HTTPS; from the denied name it fails and nothing is fetched", async () => {
    await net.resetSeen();
    records.length = 0;
    const r = await boxes.withEgress("alice", (env) =>
      boxes.sh(
        "alice",
        `${setup}python3 -m venv "$d/v" || echo venv-failed
${pipInstall(n("allowed"), "wcdemo")}
"$d/v/bin/python" -c 'import wcdemo; print(wcdemo.GREETING)'
"$d/v/bin/pip" uninstall -q -y wcdemo
${pipInstall(n("denied"), "wcdemo")}
"$d/v/bin/python" -c 'import wcdemo' 2>/dev/null || echo not-installed
cat "$d/pip.log" >&2`,
        { ...env, ...secrets },
      ),
    );
    expect(r.out.trim().split("\n"), `exit ${r.code}: ${r.err}`).toEqual([
      "pip-ok",
      "installed through the proxy",
      "pip-failed",
      "not-installed",
    ]);
    // pip only says "no matching distribution"; the proxy's audit says why.
    expect(r.err).toMatch(/No matching distribution found for wcdemo/);
    expect(
      records.filter((x) => x.host === n("denied")).map((x) => [x.protocol, x.port, x.reason]),
    ).toEqual([["connect", 443, "not_in_policy"]]);
    const seen = await net.seen();
    expect(seen.map((s) => [s.port, s.host, s.path])).toEqual([
      [443, n("allowed"), "/simple/wcdemo/"],
      [443, n("allowed"), "/static/wheels/wcdemo-1.0-py3-none-any.whl"],
    ]);
  }, 240_000);

  test("ssh through socat's CONNECT reaches sshd on the allowed name and port; the denied name never connects", async () => {
    const before = await sshd.connections();
    records.length = 0;
    const r = await boxes.withEgress("alice", (env) =>
      boxes.sh("alice", `${setup}${ssh(n("allowed"))}\n${ssh(n("denied"))}\ncat "$d/ssh.log" >&2`, {
        ...env,
        ...secrets,
      }),
    );
    expect(r.out.trim().split("\n"), r.err).toEqual([sshd.reply, "ssh-failed"]);
    expect(await sshd.connections()).toBe(before + 1);
    expect(records.map((x) => [x.host, x.port, x.decision, x.reason])).toEqual([
      [n("allowed"), sshd.port, "allowed", null],
      [n("denied"), sshd.port, "denied", "not_in_policy"],
    ]);
  }, 180_000);
});
