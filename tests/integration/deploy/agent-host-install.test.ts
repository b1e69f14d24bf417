import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import { access, cp, mkdir, mkdtemp, readFile, realpath, rm } from "node:fs/promises";
import { homedir, tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { promisify } from "node:util";
import { afterAll, describe, expect, test } from "vitest";

// infra/agent-host/: the install script passes shellcheck and runs to completion as root in
// a throw-away Debian rootfs (mmdebstrap from Debian's packages, `docker import`), and the
// hardened unit passes `systemd-analyze verify` with a low exposure score.

const run = promisify(execFile);
const repo = join(import.meta.dirname, "../../..");
const unit = join(repo, "infra/agent-host/workcell-agent-host.service");
const cleanups: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

describe("agent-host install", () => {
  test("the shell scripts pass shellcheck", async () => {
    await run("shellcheck", [
      join(repo, "infra/agent-host/install.sh"),
      join(repo, "infra/sst/typecheck.sh"),
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
    // The value recorded in docs/deploy/nodes.md.
    expect(Number(score?.[1])).toBeLessThanOrEqual(3);
  });

  test("install.sh runs to completion in a throw-away Debian rootfs", async () => {
    const image = await debianRootfsImage();
    // The Runtime Assets build this checkout's script would make (its key: the package
    // list and the script), as scripts/ensure-system.sh built it on this machine. It is
    // mounted read-only where install.sh looks, so the install takes the cached build
    // (the build itself runs in ensure-system.sh on every fresh CI machine) instead of a
    // second mmdebstrap of ~300 MB.
    const key = createHash("sha256")
      .update(await readFile(join(repo, "infra/runtime-assets/packages.txt")))
      .update(await readFile(join(repo, "infra/runtime-assets/build-runtime-assets.sh")))
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
    const nodeBin = await realpath(process.execPath);
    const npmDir = await realpath(join(dirname(await realpath("/usr/bin/npm")), ".."));
    const docker = await realpath((await run("bash", ["-c", "command -v docker"])).stdout.trim());
    const script = [
      "set -euo pipefail",
      "ln -s /usr/local/lib/node_modules/npm/bin/npm-cli.js /usr/local/bin/npm",
      "bash /src/infra/agent-host/install.sh --no-docker-engine",
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
      "grep -q -- '-/var/lib/workcell/runtime-assets' /etc/systemd/system/workcell-agent-host.service",
      'cd /opt/workcell && .tools/bin/node -e \'import("./infra/ops/ops-cli.ts").then(m => m.runOpsCommand(["keys", "generate"])).then(c => process.exit(c))\' | grep -q CAPABILITY_PUBLIC_KEY',
      // Re-running (an upgrade) keeps the operator's env file.
      "echo '# edited' >> /etc/workcell/agent-host.env",
      "bash /src/infra/agent-host/install.sh --no-docker-engine --no-runtime-assets --no-sandbox-image",
      "grep -q '# edited' /etc/workcell/agent-host.env",
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
        "-v",
        `${repo}:/src:ro`,
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
    expect(stdout.trim().split("\n").at(-1)).toBe("INSTALL-OK");
  }, 1_200_000);
});

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
