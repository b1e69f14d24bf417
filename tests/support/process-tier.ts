import { execFileSync } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import {
  chmod,
  copyFile,
  mkdir,
  readdir,
  readFile,
  rename,
  rm,
  stat,
  symlink,
  writeFile,
} from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Logger } from "pino";
import {
  type ProcessDriver,
  processDriverFrom,
} from "../../agent-host/sandbox/process/process-driver.ts";
import {
  type ProcessTierParts,
  processPreflight,
} from "../../agent-host/sandbox/process/process-preflight.ts";
import type { SandboxConfig } from "../../agent-host/sandbox/sandbox-config.ts";

const BUSYBOX = "/bin/busybox";

/**
 * A minimal Runtime Assets tree for lifecycle tests: Debian's static busybox laid out as
 * a merged-/usr tree (usr/bin/<applet>) with a passwd naming gem. Built once per
 * busybox binary under the temp dir (atomically: test files run in parallel); the real
 * assets (infra/runtime-assets/) are what the asset tests use.
 */
export async function busyboxRuntimeDir(): Promise<string> {
  const binary = await readFile(BUSYBOX).catch(() => {
    throw new Error(
      `${BUSYBOX} is missing: apt-get install -y busybox-static (scripts/ensure-system.sh)`,
    );
  });
  const digest = createHash("sha256").update(binary).digest("hex").slice(0, 16);
  const dir = join(tmpdir(), `workcell-test-runtime-busybox-${digest}`);
  if (
    await stat(dir).then(
      () => true,
      () => false,
    )
  )
    return dir;
  const staging = `${dir}.${randomBytes(4).toString("hex")}`;
  await mkdir(join(staging, "usr/bin"), { recursive: true });
  await mkdir(join(staging, "etc"));
  await copyFile(BUSYBOX, join(staging, "usr/bin/busybox"));
  await chmod(join(staging, "usr/bin/busybox"), 0o755);
  const applets = execFileSync(BUSYBOX, ["--list"], { encoding: "utf8" }).split("\n");
  for (const applet of applets) {
    if (applet && applet !== "busybox") await symlink("busybox", join(staging, "usr/bin", applet));
  }
  await writeFile(
    join(staging, "etc/passwd"),
    "root:x:0:0::/root:/bin/sh\ngem:x:1000:1000::/home/gem:/bin/sh\n",
  );
  await writeFile(join(staging, "etc/group"), "root:x:0:\ngem:x:1000:\n");
  await chmod(staging, 0o755);
  await rename(staging, dir).catch(async () => rm(staging, { recursive: true, force: true }));
  return dir;
}

/** The process tier's parts on this machine, or a loud failure naming what is missing. */
export async function requireProcessTier(
  stateDir: string,
  cgroupParent: string,
): Promise<ProcessTierParts> {
  const found = await processPreflight({ stateDir, cgroupParent });
  if (!found.ready)
    throw new Error(`the process sandbox tier is not usable here: ${found.missing}`);
  return found.parts;
}

export type ProcessTierFixture = {
  driver: ProcessDriver;
  parts: ProcessTierParts;
  stateDir: string;
  cgroupParent: string;
  runtimeDir: string;
  cleanup(): Promise<void>;
};

/** A process-tier driver of its own (state dir, cgroup parent) over `dataRoot`. */
export async function processTierFixture(p: {
  dataRoot: string;
  config: SandboxConfig;
  logger: Logger;
  runtimeDir?: string;
  /** Default: a fresh directory in the temp dir (whose parents others may search). */
  stateDir?: string;
}): Promise<ProcessTierFixture> {
  const id = randomBytes(6).toString("hex");
  const stateDir = p.stateDir ?? join(tmpdir(), `workcell-test-process-${id}`);
  const cgroupParent = `workcell-test/${id}`;
  const parts = await requireProcessTier(stateDir, cgroupParent);
  const runtimeDir = p.runtimeDir ?? (await busyboxRuntimeDir());
  const driver = processDriverFrom(parts, {
    logger: p.logger,
    dataRoot: p.dataRoot,
    runtimeDir,
    config: p.config,
    poolSize: p.config.processPoolSize,
  });
  return {
    driver,
    parts,
    stateDir: parts.stateDir,
    cgroupParent,
    runtimeDir,
    async cleanup() {
      const signal = AbortSignal.timeout(30_000);
      // The warm pool's blanks (decision 0185) are not generations: drained, not destroyed.
      await driver.pool.drain();
      for (const name of await readdir(parts.stateDir).catch(() => [])) {
        const c = await driver
          .inspect({ instanceId: name, tier: "process" }, signal)
          .catch(() => undefined);
        if (c) await driver.destroy(c, signal);
      }
      if (parts.stateDir !== stateDir) {
        // Reached through an alias (a closed parent, decision 0144): unbind it first.
        await parts.mounts.unmount(parts.stateDir, { lazy: true });
        await rm(stateDir, { recursive: true, force: true });
      }
      await rm(parts.stateDir, { recursive: true, force: true });
      await parts.cgroups.removeParent().catch(() => {});
    },
  };
}

/**
 * Whether a file `name` exists anywhere a command of generation `instanceId` could have
 * written it: the users' workspaces below `dataRoot`, or the generation's own directories
 * (its /tmp and home) below `stateDir`. How a refused exec is shown to have run nothing.
 */
export async function wroteAnywhere(
  where: { dataRoot: string; stateDir: string; instanceId: string },
  name: string,
): Promise<boolean> {
  for (const dir of [join(where.dataRoot, "users"), join(where.stateDir, where.instanceId)]) {
    const entries = await readdir(dir, { recursive: true }).catch(() => []);
    if (entries.some((e) => e === name || e.endsWith(`/${name}`))) return true;
  }
  return false;
}
