import { randomUUID } from "node:crypto";
import {
  chmod,
  chown,
  copyFile,
  mkdir,
  mkdtemp,
  readdir,
  rm,
  stat,
  writeFile,
} from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Docker from "dockerode";
import { describe, expect, it } from "vitest";
import { detectSandboxTiers } from "../../../agent-host/sandbox/detect-sandbox-tiers.ts";
import { SandboxManager } from "../../../agent-host/sandbox/lifecycle/sandbox-manager.ts";
import { DEFAULT_EXEC_SHIM } from "../../../agent-host/sandbox/process/exec-shim-check.ts";
import { processPreflight } from "../../../agent-host/sandbox/process/process-preflight.ts";
import { STATE_ALIAS_ROOT } from "../../../agent-host/sandbox/process/state-dir-alias.ts";
import { sandboxDriverStatus } from "../../../agent-host/sandbox/sandbox-driver-status.ts";
import { createDb } from "../../../shared/db/client.ts";
import { sandboxes } from "../../../shared/db/schema/sandboxes.ts";
import { WorkcellError } from "../../../shared/errors/workcell-error.ts";
import { freshDataRoot } from "../../support/data-root.ts";
import { requireDocker } from "../../support/docker.ts";
import { freshDatabase } from "../../support/postgres.ts";
import { busyboxRuntimeDir } from "../../support/process-tier.ts";
import { registerNode } from "./manager-fixture.ts";
import { materializeWorkdir, silentLogger, testConfig, uniqueNodeId } from "./sandbox-fixture.ts";

const hostPath = process.env.PATH ?? "";
/** PATH without the directories that hold bwrap: the part "removed". */
const pathWithoutBwrap = hostPath
  .split(":")
  .filter((d) => !["/usr/bin", "/bin", "/usr/local/bin"].includes(d))
  .concat(["/nonexistent"])
  .join(":");

describe("process tier preflight", () => {
  it("reports the tier unavailable, naming bwrap, when it is not on PATH", async () => {
    const stateDir = join(tmpdir(), `workcell-preflight-${randomUUID()}`);
    const found = await processPreflight({
      stateDir,
      cgroupParent: "workcell-test/preflight",
      path: pathWithoutBwrap,
    });
    expect(found.ready).toBe(false);
    expect(!found.ready && found.missing).toMatch(/bwrap is not on PATH.*bubblewrap/);
  });

  it("refuses a setuid bwrap (it would run privileged), and creates no state", async () => {
    const bin = await mkdtemp(join(tmpdir(), "workcell-setuid-bwrap-"));
    const stateDir = join(bin, "state");
    try {
      await copyFile("/usr/bin/bwrap", join(bin, "bwrap"));
      await chmod(join(bin, "bwrap"), 0o4755);
      const found = await processPreflight({
        stateDir,
        cgroupParent: "workcell-test/preflight-setuid",
        path: `${bin}:${hostPath}`,
      });
      expect(found.ready).toBe(false);
      expect(!found.ready && found.missing).toMatch(/bwrap is setuid or setgid/);
      await expect(stat(stateDir)).rejects.toMatchObject({ code: "ENOENT" });
    } finally {
      await rm(bin, { recursive: true, force: true });
    }
  });

  it("refuses an exec shim that is missing, not root's, writable, or below a directory others can write, and creates no state", async () => {
    const dir = await mkdtemp(join(tmpdir(), "workcell-shim-"));
    const stateDir = join(dir, "state");
    try {
      await chmod(dir, 0o755);
      const shim = join(dir, "exec-shim");
      const preflight = (execShim: string) =>
        processPreflight({ stateDir, cgroupParent: "workcell-test/preflight-shim", execShim });
      const refused = async (execShim: string, why: RegExp) => {
        const found = await preflight(execShim);
        expect(found.ready).toBe(false);
        expect(!found.ready && found.missing).toMatch(why);
        await expect(stat(stateDir)).rejects.toMatchObject({ code: "ENOENT" });
      };
      await refused(shim, /exec shim .* is missing: build it with scripts\/build-exec-shim\.sh/);
      await copyFile(DEFAULT_EXEC_SHIM, shim);
      await chmod(shim, 0o755);
      await chown(shim, 1000, 1000);
      await refused(shim, /must be root's and read-only to others \(it is uid 1000/);
      await chown(shim, 0, 0);
      await chmod(shim, 0o777);
      await refused(shim, /must be root's and read-only to others/);
      await chmod(shim, 0o555);
      // A directory another user can write: it could swap the binary every exec starts from.
      const open = join(dir, "open");
      await mkdir(open, { mode: 0o755 });
      await chmod(open, 0o777);
      await copyFile(shim, join(open, "exec-shim"));
      await chmod(join(open, "exec-shim"), 0o555);
      await refused(
        join(open, "exec-shim"),
        /below .*open, which someone other than root can write/,
      );
      // The control: the same binary, root's and read-only, in root's directory.
      const found = await preflight(shim);
      expect(found.ready && found.parts.tools.execShim).toBe(shim);
      if (found.ready) await found.parts.cgroups.removeParent();
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("reports AppArmor's user namespace restriction as the missing part", async () => {
    const procSys = await mkdtemp(join(tmpdir(), "workcell-procsys-"));
    try {
      await mkdir(join(procSys, "kernel"), { recursive: true });
      await writeFile(join(procSys, "kernel/apparmor_restrict_unprivileged_userns"), "1\n");
      const found = await processPreflight({
        stateDir: join(procSys, "state"),
        cgroupParent: "workcell-test/preflight",
        procSys,
      });
      expect(!found.ready && found.missing).toMatch(
        /AppArmor restricts unprivileged user namespaces/,
      );
    } finally {
      await rm(procSys, { recursive: true, force: true });
    }
  });

  it("is ready on this machine with everything present", async () => {
    const stateDir = join(tmpdir(), `workcell-preflight-${randomUUID()}`);
    const found = await processPreflight({ stateDir, cgroupParent: "workcell-test/preflight" });
    expect(found.ready && found.detail).toMatch(/bubblewrap \d+\.\d+\.\d+, cgroup v[12]/);
    if (found.ready) await found.parts.cgroups.removeParent();
    await rm(stateDir, { recursive: true, force: true });
  });

  // Issue 37 item 6: the state directory is root's 0711 (tightened when found looser), and
  // below a parent others cannot search (a 0700 state root) bwrap, which resolves its binds
  // as paths as an unprivileged uid, is given an alias of it (decisions 0106, 0144).
  it("makes the state directory root's 0711, and reaches one below a directory others cannot search through an alias", async () => {
    const parent = await mkdtemp(join(tmpdir(), "workcell-state-parent-"));
    try {
      const loose = join(parent, "loose");
      await mkdir(loose, { mode: 0o755 });
      await chmod(loose, 0o777);
      await chmod(parent, 0o755);
      const ok = await processPreflight({
        stateDir: loose,
        cgroupParent: "workcell-test/preflight-state",
      });
      expect(ok.ready).toBe(true);
      if (ok.ready) await ok.parts.cgroups.removeParent();
      const made = await stat(loose);
      expect([made.uid, made.mode & 0o777]).toEqual([0, 0o711]);

      await chmod(parent, 0o700);
      const hidden = join(parent, "state");
      const found = await processPreflight({
        stateDir: hidden,
        cgroupParent: "workcell-test/preflight-state",
      });
      if (!found.ready) throw new Error(found.missing);
      const alias = found.parts.stateDir;
      try {
        expect(alias.startsWith(`${STATE_ALIAS_ROOT}/`)).toBe(true);
        const [real, shown] = [await stat(hidden), await stat(alias)];
        expect([shown.dev, shown.ino]).toEqual([real.dev, real.ino]);
        expect([shown.uid, shown.mode & 0o777]).toEqual([0, 0o711]);
        // The closed parent stays closed.
        expect((await stat(parent)).mode & 0o777).toBe(0o700);
        // A second start reuses the alias rather than stacking another bind.
        const again = await processPreflight({
          stateDir: hidden,
          cgroupParent: "workcell-test/preflight-state",
        });
        expect(again.ready && again.parts.stateDir).toBe(alias);
        if (again.ready) await again.parts.cgroups.removeParent();
      } finally {
        await found.parts.mounts.unmount(alias, { lazy: true });
        await rm(alias, { recursive: true, force: true });
        await found.parts.cgroups.removeParent();
      }
    } finally {
      await rm(parent, { recursive: true, force: true });
    }
  });

  it("with a part missing, a run asking for the tier fails sandbox_tier_unavailable and nothing runs", async () => {
    const database = await freshDatabase();
    const dataRoot = await freshDataRoot();
    const stateDir = join(tmpdir(), `workcell-preflight-${randomUUID()}`);
    try {
      const db = createDb(database.sql);
      const nodeId = uniqueNodeId();
      await registerNode(db, nodeId);
      const tiers = await detectSandboxTiers({
        logger: silentLogger,
        dataRoot: dataRoot.path,
        nodeId: nodeId,
        config: testConfig("unused"),
        runtimeDir: await busyboxRuntimeDir(),
        process: { stateDir, cgroupParent: `workcell-test/${nodeId}`, path: pathWithoutBwrap },
      });
      expect(tiers.statuses).toEqual([
        { tier: "container", ready: false, detail: "not configured on this node" },
        { tier: "process", ready: false, detail: expect.stringMatching(/bwrap is not on PATH/) },
      ]);
      expect(tiers.driver.defaultTier()).toBeUndefined();
      const manager = new SandboxManager({
        db,
        driver: tiers.driver,
        logger: silentLogger,
        nodeId,
        config: testConfig("unused"),
      });
      const workdirPath = "work/refused";
      await materializeWorkdir(dataRoot.path, "pat", workdirPath);
      const err = await manager
        .acquire(
          { uid: "pat", runtimeScopeId: randomUUID(), workdirPath, tier: "process" },
          AbortSignal.timeout(30_000),
        )
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(WorkcellError);
      expect((err as WorkcellError).details).toMatchObject({
        reason: "sandbox_tier_unavailable",
        tier: "process",
      });
      // Nothing was created: no generation directory, no running row.
      expect(await readdir(stateDir).catch(() => [])).toEqual([]);
      const rows = await db.select().from(sandboxes);
      expect(rows.filter((r) => r.state === "running")).toEqual([]);
    } finally {
      await database.drop();
      await dataRoot.remove();
      await rm(stateDir, { recursive: true, force: true });
    }
  });

  // Issue 37 item 5: containers share host uid 1000's kernel budget (one tenant holding
  // 128 inotify instances left another's container with EMFILE); the process tier gives
  // each sandbox its own (process-kernel-budget.test.ts). So where both are ready a run
  // naming no tier gets the process tier, and the container tier's readiness says why.
  it("with both tiers ready, the default is the process tier and the container tier says it does not isolate the kernel budget", async () => {
    const { image } = requireDocker();
    const dataRoot = await freshDataRoot();
    const stateDir = join(tmpdir(), `workcell-preflight-${randomUUID()}`);
    const nodeId = uniqueNodeId();
    try {
      const tiers = await detectSandboxTiers({
        logger: silentLogger,
        dataRoot: dataRoot.path,
        nodeId,
        config: testConfig(image),
        runtimeDir: await busyboxRuntimeDir(),
        docker: new Docker(),
        process: { stateDir, cgroupParent: `workcell-test/${nodeId}` },
      });
      expect(tiers.statuses).toEqual([
        {
          tier: "container",
          ready: true,
          detail: expect.stringContaining("kernel budget not isolated"),
        },
        { tier: "process", ready: true, detail: expect.any(String) },
      ]);
      expect(tiers.driver.defaultTier()).toBe("process");
      expect(sandboxDriverStatus(tiers).kind).toBe("process");
    } finally {
      await dataRoot.remove();
      await rm(stateDir, { recursive: true, force: true });
    }
  });
});
