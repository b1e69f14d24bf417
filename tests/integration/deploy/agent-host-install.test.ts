import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync } from "node:fs";
import { access, cp, mkdir, mkdtemp, readFile, realpath, rm, writeFile } from "node:fs/promises";
import { homedir, tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { promisify } from "node:util";
import { afterAll, describe, expect, test } from "vitest";
import { PROBE_LABEL } from "../../../agent-host/runtime/container-asset-prober.ts";
import { LABEL } from "../../../agent-host/sandbox/instance/container-labels.ts";
import { generateCapabilityKeyPair } from "../../../infra/ops/keys-command.ts";
import { renderAgentHostEnv } from "../../../infra/sst/agent-host-env-file.ts";
import { buildAgentHostRelease } from "../../../infra/sst/agent-host-release.ts";
import { freePort } from "../../setup/free-port.ts";
import { awsConfig, freshBucket, freshQueue } from "../../support/aws.ts";
import { freshDatabase } from "../../support/postgres.ts";
import { boundingSet, syscallFilter, unitServiceSettings } from "./unit-service-settings.ts";

// infra/agent-host/: the install script passes shellcheck and runs to completion as root in
// a throw-away Debian rootfs (mmdebstrap from Debian's packages, `docker import`), and the
// hardened unit passes `systemd-analyze verify` with a low exposure score and leaves the
// container tier what it needs to stage binds in the host's mount namespace.

const run = promisify(execFile);
const repo = join(import.meta.dirname, "../../..");
const unit = join(repo, "infra/agent-host/workcell-agent-host.service");
const processTierDropIn = join(repo, "infra/agent-host/process-tier.conf");

// Settings that give a service its own mount namespace, whose root systemd makes a slave
// of the host's, so a bind the service makes never reaches dockerd (systemd.exec(5);
// decision 0064), with the value that turns each one off.
const MOUNT_NAMESPACE_SETTINGS: Record<string, string[]> = {
  ProtectSystem: ["no", "false"],
  ProtectHome: ["no", "false"],
  PrivateTmp: ["no", "false"],
  PrivateDevices: ["no", "false"],
  PrivateMounts: ["no", "false"],
  PrivateNetwork: ["no", "false"],
  PrivateIPC: ["no", "false"],
  ProtectKernelTunables: ["no", "false"],
  ProtectKernelModules: ["no", "false"],
  ProtectKernelLogs: ["no", "false"],
  ProtectControlGroups: ["no", "false"],
  ProtectProc: ["default"],
  ProcSubset: ["all"],
  MountAPIVFS: ["no", "false"],
  MountFlags: ["shared"],
  ReadWritePaths: [""],
  ReadOnlyPaths: [""],
  InaccessiblePaths: [""],
  ExecPaths: [""],
  NoExecPaths: [""],
  TemporaryFileSystem: [""],
  BindPaths: [""],
  BindReadOnlyPaths: [""],
  RootDirectory: [""],
  RootImage: [""],
  MountImages: [""],
  ExtensionImages: [""],
  ExtensionDirectories: [""],
  LogNamespace: [""],
  DynamicUser: ["no", "false"],
};

/** Why a unit (plus drop-ins) cannot stage the container tier's binds; empty when it can. */
async function containerTierProblems(texts: string[]): Promise<string[]> {
  const settings = unitServiceSettings(texts);
  const problems: string[] = [];
  const caps = boundingSet(settings.get("CapabilityBoundingSet"));
  if (caps !== "all" && !caps.has("CAP_SYS_ADMIN")) problems.push("no CAP_SYS_ADMIN");
  const filter = await syscallFilter(settings.get("SystemCallFilter"));
  for (const call of ["mount", "umount2"]) {
    const allowed = filter.allowed === "all" ? !filter.denied.has(call) : filter.allowed.has(call);
    if (!allowed) problems.push(`${call}(2) refused by SystemCallFilter`);
  }
  for (const [key, off] of Object.entries(MOUNT_NAMESPACE_SETTINGS)) {
    const value = settings.get(key)?.at(-1);
    if (value !== undefined && !off.includes(value)) problems.push(`${key}=${value}`);
  }
  return problems;
}
const cleanups: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

describe("agent-host install", () => {
  test("the shell scripts pass shellcheck", async () => {
    await run("shellcheck", [
      join(repo, "infra/agent-host/install.sh"),
      join(repo, "infra/sst/typecheck.sh"),
      join(repo, "infra/sst/ensure-platform.sh"),
      join(repo, "infra/agent-host/image/build-image.sh"),
      join(repo, "infra/runtime-assets/import-sandbox-image.sh"),
    ]).catch((error: { stdout?: string; message: string }) => {
      throw new Error(`shellcheck (apt-get install shellcheck): ${error.stdout ?? error.message}`);
    });
  });

  test("the Runtime Assets build script passes shellcheck", async () => {
    // SC2016: dpkg-query's ${Package} format is meant literally (single quotes on purpose).
    await run("shellcheck", [
      "-e",
      "SC2016",
      join(repo, "infra/runtime-assets/build-runtime-assets.sh"),
    ]).catch((error: { stdout?: string; message: string }) => {
      throw new Error(`shellcheck: ${error.stdout ?? error.message}`);
    });
  });

  test("the unit lets the container tier stage binds in the host's mount namespace", async () => {
    const base = await readFile(unit, "utf8");
    const dropIn = await readFile(processTierDropIn, "utf8");
    expect(await containerTierProblems([base])).toEqual([]);
    expect(await containerTierProblems([base, dropIn])).toEqual([]);
    // The rest of the hardening stays: the parse sees the unit's refusals.
    const settings = unitServiceSettings([base]);
    const filter = await syscallFilter(settings.get("SystemCallFilter"));
    expect(filter.allowed).not.toBe("all");
    for (const call of ["pivot_root", "chroot", "syslog", "init_module", "reboot", "ptrace"]) {
      expect(filter.allowed !== "all" && filter.allowed.has(call), call).toBe(false);
    }
    expect(filter.allowed !== "all" && filter.allowed.has("fchown")).toBe(true);
    expect(settings.get("RestrictNamespaces")).toEqual(["yes"]);
    expect(settings.get("NoNewPrivileges")).toEqual(["yes"]);
    // The check fails on a unit that has any of the three obstacles (the unit before 0064
    // had all three).
    const withNamespace = `${base}\n[Service]\nProtectSystem=strict\nReadWritePaths=/srv/workcell\n`;
    expect(await containerTierProblems([withNamespace])).toEqual([
      "ProtectSystem=strict",
      "ReadWritePaths=/srv/workcell",
    ]);
    const noMount = `${base}\n[Service]\nSystemCallFilter=~@mount\n`;
    expect(await containerTierProblems([noMount])).toEqual([
      "mount(2) refused by SystemCallFilter",
      "umount2(2) refused by SystemCallFilter",
    ]);
    const noCap = `${base}\n[Service]\nCapabilityBoundingSet=\nCapabilityBoundingSet=CAP_CHOWN\n`;
    expect(await containerTierProblems([noCap])).toEqual(["no CAP_SYS_ADMIN"]);
  });

  test("the unit passes systemd-analyze verify and rates OK in systemd-analyze security", async () => {
    // A throw-away root with the units Debian ships and the ExecStart binary, so that the
    // verification does not depend on this machine having Workcell installed.
    const root = await mkdtemp(join(tmpdir(), "wc-unit-root-"));
    cleanups.push(() => rm(root, { recursive: true, force: true }));
    await mkdir(join(root, "opt/workcell/.tools/bin"), { recursive: true });
    await cp("/usr/bin/true", join(root, "opt/workcell/.tools/bin/node"));
    await mkdir(join(root, "usr/lib/systemd"), { recursive: true });
    await cp("/usr/lib/systemd/system", join(root, "usr/lib/systemd/system"), { recursive: true });
    await mkdir(join(root, "etc/systemd/system"), { recursive: true });
    await cp(unit, join(root, "etc/systemd/system/workcell-agent-host.service"));
    const verified = await run("systemd-analyze", [
      "verify",
      `--root=${root}`,
      "workcell-agent-host.service",
    ]);
    expect(verified.stderr).toBe("");
    // With the process tier's drop-in (docs/deploy/nodes.md) the unit still verifies.
    const dropIns = join(root, "etc/systemd/system/workcell-agent-host.service.d");
    await mkdir(dropIns, { recursive: true });
    await cp(processTierDropIn, join(dropIns, "process-tier.conf"));
    const withDropIn = await run("systemd-analyze", [
      "verify",
      `--root=${root}`,
      "workcell-agent-host.service",
    ]);
    expect(withDropIn.stderr).toBe("");
    // The drop-in is read: a wrong key in it is reported.
    await writeFile(join(dropIns, "zz-wrong.conf"), "[Service]\nRestrictNamespace=no\n");
    const wrong = await run("systemd-analyze", [
      "verify",
      `--root=${root}`,
      "workcell-agent-host.service",
    ]);
    expect(wrong.stderr).toMatch(/Unknown key 'RestrictNamespace'/);
    await rm(join(dropIns, "zz-wrong.conf"));
    // Without the ExecStart binary the same verification fails: it really checks the unit.
    await rm(join(root, "opt/workcell/.tools/bin/node"));
    await expect(
      run("systemd-analyze", ["verify", `--root=${root}`, "workcell-agent-host.service"]),
    ).rejects.toThrow(/not executable/);

    const { stdout } = await run("systemd-analyze", ["security", "--offline=true", unit]);
    const score = /Overall exposure level for workcell-agent-host\.service: ([\d.]+) (\w+)/.exec(
      stdout,
    );
    expect(score?.[2]).toBe("OK");
    // The value recorded in docs/deploy/nodes.md (4.8; 2.9 before the mount namespace went,
    // decision 0064).
    expect(Number(score?.[1])).toBeLessThanOrEqual(5);
  });

  test("install.sh runs to completion from the release tarball in a throw-away Debian rootfs", async () => {
    const image = await debianRootfsImage();
    // What `sst deploy` uploads for its nodes (infra/sst/agent-host-release.ts), unpacked
    // and checked as a node's first boot does it, instead of this checkout.
    const releaseDir = await mkdtemp(join(tmpdir(), "wc-release-"));
    cleanups.push(() => rm(releaseDir, { recursive: true, force: true }));
    const release = buildAgentHostRelease(repo, releaseDir);
    const tarball = `/release/${release.file.slice(releaseDir.length + 1)}`;
    // The Runtime Assets build this checkout's script would make (its key: the package
    // list, the script and the sandbox's Node version), as scripts/ensure-system.sh built it on this machine. It is
    // mounted read-only where install.sh looks, so the install takes the cached build
    // (the build itself runs in ensure-system.sh on every fresh CI machine) instead of a
    // second mmdebstrap of ~300 MB.
    const key = createHash("sha256")
      .update(await readFile(join(repo, "infra/runtime-assets/packages.txt")))
      .update(await readFile(join(repo, "infra/runtime-assets/build-runtime-assets.sh")))
      .update(await readFile(join(repo, ".node-version")))
      .digest("hex")
      .slice(0, 16);
    const assetsBuild = `/var/lib/workcell/runtime-assets/${key}`;
    await access(join(assetsBuild, "manifest.json")).catch(() => {
      throw new Error(
        `no Runtime Assets build ${key} on this machine: run scripts/ensure-system.sh first`,
      );
    });
    const name = `wc-install-test-${process.pid}-${Date.now()}`;
    cleanups.push(async () => {
      await run("docker", ["rm", "-f", name]).catch(() => {});
    });
    // The env file as the deploy renders it for every node (plus NODE_ID, and what points
    // the node at this machine's Postgres, fauxqs and Runtime Assets build instead of AWS's).
    const nodeId = `install-test-${process.pid}-${Date.now()}`;
    // The node verifies the Runtime Assets in containers of this machine's engine; one
    // stopped mid-probe leaves its probe container behind.
    cleanups.push(async () => {
      for (const label of [`${PROBE_LABEL}=${nodeId}`, `${LABEL.nodeId}=${nodeId}`]) {
        const { stdout } = await run("docker", ["ps", "-aq", "--filter", `label=${label}`]);
        for (const id of stdout.split("\n").filter(Boolean)) {
          await run("docker", ["rm", "-f", id]).catch(() => {});
        }
      }
    });
    const database = await freshDatabase();
    cleanups.push(() => database.drop());
    const dataRoot = await mkdtemp(join(tmpdir(), "wc-install-data-"));
    cleanups.push(() => rm(dataRoot, { recursive: true, force: true }));
    const envDir = await mkdtemp(join(tmpdir(), "wc-install-env-"));
    cleanups.push(() => rm(envDir, { recursive: true, force: true }));
    const aws = awsConfig();
    const port = await freePort();
    const envFile = renderAgentHostEnv({
      DATABASE_URL: database.url,
      DATA_ROOT: dataRoot,
      RUN_QUEUE_URL: await freshQueue(),
      RUN_DLQ_URL: await freshQueue(),
      ATTACHMENTS_BUCKET: await freshBucket(),
      AWS_REGION: aws.region,
      CAPABILITY_PUBLIC_KEY: (await generateCapabilityKeyPair()).publicJwk,
      DATA_PLANE_PORT: String(port),
      DATA_PLANE_PUBLIC_URL: "https://dp.workcell.example.test",
      DATA_PLANE_CORS_ORIGINS: "https://console.workcell.example.test",
    });
    const testLines = [
      `NODE_ID=${nodeId}`,
      `AWS_ENDPOINT_URL=${aws.endpoint}`,
      "AWS_ACCESS_KEY_ID=test",
      "AWS_SECRET_ACCESS_KEY=test",
      "DATA_PLANE_HOST=127.0.0.1",
      `RUNTIME_ASSETS_DIR=${assetsBuild}/tree`,
      "NODE_HEARTBEAT_SECONDS=1",
    ];
    await writeFile(join(envDir, "agent-host.env"), `${envFile}${testLines.join("\n")}\n`);
    // Polls the installed node's /readyz (no curl in the rootfs) until it is 200, bounded.
    const pollReady = `const deadline = Date.now() + 240000;
for (;;) {
  const res = await fetch("http://127.0.0.1:${port}/readyz").catch(() => undefined);
  if (res?.status === 200) { console.log("READY " + JSON.stringify(await res.json())); break; }
  if (Date.now() > deadline) { console.log("NOT-READY " + (res ? res.status + " " + (await res.text()) : "no answer")); process.exit(1); }
  await new Promise((r) => setTimeout(r, 500));
}`;
    await writeFile(join(envDir, "poll-ready.mjs"), pollReady);
    const nodeBin = await realpath(process.execPath);
    const npmDir = await realpath(join(dirname(await realpath("/usr/bin/npm")), ".."));
    const docker = await realpath((await run("bash", ["-c", "command -v docker"])).stdout.trim());
    const script = [
      "set -euo pipefail",
      "ln -s /usr/local/lib/node_modules/npm/bin/npm-cli.js /usr/local/bin/npm",
      `echo '${release.sha256}  ${tarball}' | sha256sum --check --strict --quiet -`,
      "mkdir /tmp/release",
      `tar -xzf ${tarball} -C /tmp/release --no-same-owner`,
      "bash /tmp/release/infra/agent-host/install.sh --no-docker-engine",
      // What landed: production dependencies only, the unit, a private env file.
      "test -d /opt/workcell/node_modules/hono",
      "test ! -e /opt/workcell/node_modules/fauxqs",
      "test ! -e /opt/workcell/node_modules/vitest",
      "test ! -e /opt/workcell/tests",
      "test -f /etc/systemd/system/workcell-agent-host.service",
      'test "$(stat -c %a /etc/workcell/agent-host.env)" = 600',
      "test -d /srv/workcell",
      // The Runtime Assets where agent-hosts look by default, and their image in the engine.
      `test "$(readlink /var/lib/workcell/runtime-assets/current)" = ${key}`,
      "test -x /var/lib/workcell/runtime-assets/current/tree/usr/bin/bash",
      "command -v bwrap mmdebstrap",
      `docker image inspect workcell-sandbox:${key} >/dev/null`,
      "grep -q '^CapabilityBoundingSet=.*CAP_SYS_ADMIN' /etc/systemd/system/workcell-agent-host.service",
      'cd /opt/workcell && .tools/bin/node -e \'import("./infra/ops/ops-cli.ts").then(m => m.runOpsCommand(["keys", "generate"])).then(c => process.exit(c))\' | grep -q CAPABILITY_PUBLIC_KEY',
      // Re-running (an upgrade) keeps the operator's env file.
      "echo '# edited' >> /etc/workcell/agent-host.env",
      "bash /tmp/release/infra/agent-host/install.sh --no-docker-engine --no-runtime-assets --no-sandbox-image",
      "grep -q '# edited' /etc/workcell/agent-host.env",
      // The installed node runs: the env file the deploy writes, read as systemd would
      // (literal single-quoted values), then /readyz until it says ready, then SIGTERM.
      "install -m 0600 /test-env/agent-host.env /etc/workcell/agent-host.env",
      "(set -a; . /etc/workcell/agent-host.env; set +a; cd /opt/workcell && exec .tools/bin/node agent-host/main.ts) >/tmp/agent-host.log 2>&1 &",
      "agent_host=$!",
      "/opt/workcell/.tools/bin/node /test-env/poll-ready.mjs || { tail -n 40 /tmp/agent-host.log; exit 1; }",
      'kill -TERM "$agent_host"',
      'wait "$agent_host" && echo "STOPPED 0" || echo "STOPPED $?"',
      "echo INSTALL-OK",
    ].join("\n");
    const { stdout } = await run(
      "docker",
      [
        "run",
        "--name",
        name,
        "--label",
        "workcell.test=agent-host-install",
        // npm reaches the registry; nothing else is installed from the network.
        "--network",
        "host",
        ...extraCaArgs(),
        "-v",
        `${releaseDir}:/release:ro`,
        "-v",
        `${envDir}:/test-env:ro`,
        "-v",
        `${dataRoot}:${dataRoot}`,
        "-v",
        `${nodeBin}:/usr/local/bin/node:ro`,
        "-v",
        `${npmDir}:/usr/local/lib/node_modules/npm:ro`,
        "-v",
        `${docker}:/usr/local/bin/docker:ro`,
        "-v",
        "/var/run/docker.sock:/var/run/docker.sock",
        "-v",
        `${assetsBuild}:${assetsBuild}:ro`,
        "-v",
        `${join(homedir(), ".npm")}:/root/.npm`,
        image,
        "bash",
        "-c",
        script,
      ],
      { maxBuffer: 64 << 20, timeout: 900_000 },
    );
    expect(stdout).toContain("install.sh: copying the code to /opt/workcell");
    expect(stdout).toContain(`runtime assets ${key} already built`);
    expect(stdout).toContain(`container tier image workcell-sandbox:${key}`);
    const ready = /^READY (.*)$/m.exec(stdout);
    expect(ready, stdout.slice(-4000)).not.toBeNull();
    expect(JSON.parse(ready?.[1] ?? "{}")).toMatchObject({
      ready: true,
      components: { db: "ok", queue: "ok", quiesced: false },
    });
    expect(stdout).toContain("STOPPED 0");
    const [row] = await database.sql<{ data_plane_url: string }[]>`
      select data_plane_url from nodes where node_id = ${nodeId}`;
    expect(row?.data_plane_url).toBe("https://dp.workcell.example.test");
    expect(stdout.trim().split("\n").at(-1)).toBe("INSTALL-OK");
  }, 1_200_000);
});

/**
 * A registry reached through a TLS-inspecting proxy is trusted on this machine through
 * NODE_EXTRA_CA_CERTS; npm inside the rootfs gets the same file, or `npm ci` fails with
 * SELF_SIGNED_CERT_IN_CHAIN for any package not fresh in the mounted cache.
 */
function extraCaArgs(): string[] {
  const file = process.env.NODE_EXTRA_CA_CERTS;
  if (file === undefined || file === "" || !existsSync(file)) return [];
  return [
    "-v",
    `${file}:/etc/workcell-test-extra-ca.pem:ro`,
    "-e",
    "NODE_EXTRA_CA_CERTS=/etc/workcell-test-extra-ca.pem",
  ];
}

// bubblewrap and mmdebstrap are what install.sh would otherwise fetch from Debian for the
// process tier and the Runtime Assets; in the image, the install finds them.
const ROOTFS_PACKAGES = ["bash", "ca-certificates", "tar", "coreutils", "bubblewrap", "mmdebstrap"];

/** A Debian bookworm rootfs image, built once per package set (its tag is the set's hash). */
async function debianRootfsImage(): Promise<string> {
  const hash = createHash("sha256").update(ROOTFS_PACKAGES.join(",")).digest("hex").slice(0, 12);
  const image = `workcell-test/debian-install-rootfs:${hash}`;
  const present = await run("docker", ["image", "inspect", image]).then(
    () => true,
    () => false,
  );
  if (present) return image;
  const dir = await mkdtemp(join(tmpdir(), "wc-rootfs-"));
  try {
    const tarball = join(dir, "rootfs.tar");
    await run(
      "mmdebstrap",
      ["--variant=apt", `--include=${ROOTFS_PACKAGES.join(",")}`, "bookworm", tarball],
      { maxBuffer: 64 << 20, timeout: 900_000 },
    ).catch((error: Error) => {
      throw new Error(`mmdebstrap (apt-get install mmdebstrap) failed: ${error.message}`);
    });
    await run("docker", ["import", tarball, image]);
    return image;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
