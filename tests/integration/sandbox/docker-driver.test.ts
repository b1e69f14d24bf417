import { randomUUID } from "node:crypto";
import { mkdir, readFile, rename, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type Docker from "dockerode";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { DockerDriver } from "../../../agent-host/sandbox/container/docker-driver.ts";
import type { SandboxInstance, SandboxSpec } from "../../../agent-host/sandbox/driver.ts";
import {
  containerName,
  LABEL,
  MANAGED_BY,
} from "../../../agent-host/sandbox/instance/container-labels.ts";
import { sandboxId } from "../../../shared/identity/sandbox-id.ts";
import { uidDirname } from "../../../shared/paths/uid-dirname.ts";
import { type DataRoot, freshDataRoot } from "../../support/data-root.ts";
import { removeContainersLabelled, requireDocker } from "../../support/docker.ts";
import {
  containersOfNode,
  materializeWorkdir,
  testConfig,
  testDriver,
  uniqueNodeId,
} from "./sandbox-fixture.ts";

const signal = () => AbortSignal.timeout(60_000);

describe("DockerDriver", () => {
  let docker: Docker;
  let image: string;
  let dataRoot: DataRoot;
  let nodeId: string;
  let driver: DockerDriver;
  let generation = 1;

  beforeEach(async () => {
    ({ docker, image } = requireDocker());
    dataRoot = await freshDataRoot();
    nodeId = uniqueNodeId();
    driver = testDriver(docker, dataRoot.path, testConfig(image));
  });

  afterEach(async () => {
    await removeContainersLabelled(docker, LABEL.nodeId, nodeId);
    await dataRoot.remove();
  });

  async function specFor(uid = `user-${randomUUID().slice(0, 8)}`): Promise<SandboxSpec> {
    const runtimeScopeId = randomUUID();
    const workdirPath = `projects/${randomUUID()}`;
    await materializeWorkdir(dataRoot.path, uid, workdirPath);
    return {
      sandboxId: sandboxId(uid, runtimeScopeId),
      generation: generation++,
      uid,
      runtimeScopeId,
      workdirPath,
      nodeId,
    };
  }

  async function createOk(spec: SandboxSpec): Promise<SandboxInstance> {
    const created = await driver.create(spec, signal());
    if (!created.ok) throw new Error(`create refused: ${created.reason} ${created.detail}`);
    return created.instance;
  }

  async function sh(c: SandboxInstance, script: string, extra: { stdin?: string } = {}) {
    const out = await driver.exec(c, { cmd: ["sh", "-c", script], ...extra }, signal());
    if (!out.ok) throw new Error("sandbox gone");
    return {
      ...out.result,
      out: out.result.stdout.bytes.toString(),
      err: out.result.stderr.bytes.toString(),
    };
  }

  it("creates a labelled, running container that inspect and list report, and destroys it", async () => {
    const spec = await specFor();
    const c = await createOk(spec);
    expect(c).toMatchObject({
      sandboxId: spec.sandboxId,
      generation: spec.generation,
      uidDirname: uidDirname(spec.uid),
      runtimeScopeId: spec.runtimeScopeId,
      workdirPath: spec.workdirPath,
      nodeId,
      running: true,
    });
    const info = await docker.getContainer(c.instanceId).inspect();
    expect(info.Name).toBe(`/${containerName(spec.sandboxId, spec.generation)}`);
    expect(info.Config.Labels[LABEL.managedBy]).toBe(MANAGED_BY);
    expect(info.Config.User).toBe("1000:1000");
    expect(info.HostConfig.CapDrop).toEqual(["ALL"]);
    expect(info.HostConfig.ReadonlyRootfs).toBe(true);
    expect(info.HostConfig.Init).toBe(true);
    expect(info.HostConfig.NetworkMode).toBe("none");
    expect(info.HostConfig.SecurityOpt).toContain("no-new-privileges:true");
    expect(await driver.inspect(c.instanceId, signal())).toEqual(c);
    expect(await driver.list(nodeId, signal())).toEqual([c]);

    expect(await driver.destroy(c, signal())).toEqual({ ok: true, existed: true });
    expect(await driver.inspect(c.instanceId, signal())).toBeUndefined();
    expect(await driver.destroy(c, signal())).toEqual({ ok: true, existed: false });
    expect(await containersOfNode(docker, nodeId)).toEqual([]);
  });

  it("refuses to destroy a container through a ref of another generation", async () => {
    const c = await createOk(await specFor());
    const stale = { ...c, generation: c.generation - 1 };
    expect(await driver.destroy(stale, signal())).toEqual({
      ok: false,
      reason: "stale_generation",
    });
    expect((await driver.inspect(c.instanceId, signal()))?.running).toBe(true);
  });

  describe("hardening, observed from inside", () => {
    it("runs as 1000:1000 in the Workdir with no capabilities and no new privileges", async () => {
      const spec = await specFor();
      const c = await createOk(spec);
      const r = await sh(
        c,
        "id -u; id -g; pwd; grep -E '^(CapEff|CapPrm|NoNewPrivs)' /proc/self/status",
      );
      expect(r.out.split("\n")).toEqual([
        "1000",
        "1000",
        `/home/gem/user-data/${spec.workdirPath}`,
        "CapPrm:\t0000000000000000",
        "CapEff:\t0000000000000000",
        "NoNewPrivs:\t1",
        "",
      ]);
    });

    it("has only loopback for a network", async () => {
      const c = await createOk(await specFor());
      const r = await sh(c, "tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '");
      expect(r.out.trim().split("\n")).toEqual(["lo"]);
    });

    it("keeps the rootfs and the skills read-only and the workspace writable", async () => {
      const spec = await specFor();
      const skills = join(dataRoot.path, "skills", "projections", uidDirname(spec.uid));
      await mkdir(join(skills, "demo"), { recursive: true });
      await writeFile(join(skills, "demo", "SKILL.md"), "# demo\n");
      const c = await createOk(spec);
      const r = await sh(
        c,
        [
          "cat /home/gem/skills/demo/SKILL.md",
          "touch /home/gem/skills/x 2>&1 || echo skills-ro",
          "touch /etc/x 2>&1 || echo rootfs-ro",
          "echo hi > out.txt && echo wrote",
          "touch /tmp/t ~/h && echo scratch-ok",
        ].join("; "),
      );
      expect(r.out).toContain("# demo");
      expect(r.out).toContain("skills-ro");
      expect(r.out).toContain("rootfs-ro");
      expect(r.out).toContain("wrote");
      expect(r.out).toContain("scratch-ok");
      const workspace = join(dataRoot.path, "users", uidDirname(spec.uid), "workspace");
      expect(await readFile(join(workspace, spec.workdirPath, "out.txt"), "utf8")).toBe("hi\n");
    });

    it("does not see another user's workspace", async () => {
      const mine = await specFor("alice");
      const other = await specFor("bob");
      const otherWs = join(dataRoot.path, "users", uidDirname(other.uid), "workspace");
      await writeFile(join(otherWs, "bob-secret.txt"), "secret");
      const c = await createOk(mine);
      const r = await sh(
        c,
        "find / -xdev -name 'bob-secret*' 2>/dev/null; find /home/gem -name 'bob-secret*'; ls /home/gem/user-data; grep -c user-data /proc/self/mountinfo",
      );
      expect(r.out.split("\n").filter(Boolean)).toEqual(["projects", "1"]);
    });

    it("stops a fork bomb at the pids limit", async () => {
      driver = testDriver(docker, dataRoot.path, testConfig(image, { pidsLimit: 24 }));
      const c = await createOk(await specFor());
      const r = await driver.exec(
        c,
        {
          // The classic bomb: every copy forks two more until fork fails; the copies
          // that survive keep trying, so it only ends when it is killed.
          cmd: ["sh", "-c", "bomb() { bomb | bomb & }; bomb"],
          timeoutMs: 3_000,
        },
        signal(),
      );
      if (!r.ok) throw new Error("gone");
      // busybox sh exits when fork fails, so the bomb may burn out before the timeout;
      // either way it hit the limit, and the sandbox is usable once it is gone.
      expect(["exited", "timed_out"]).toContain(r.result.status);
      expect(r.result.stderr.bytes.toString()).toMatch(
        /can't fork|Resource temporarily unavailable/,
      );
      let left: string[] = [];
      for (let i = 0; i < 300; i++) {
        const ps = await driver.exec(c, { cmd: ["ps", "-o", "comm"] }, signal());
        left = ps.ok ? ps.result.stdout.bytes.toString().trim().split("\n").slice(1) : ["?"];
        if (left.length === 3) break; // docker-init, the keep-alive, this ps
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      expect(left.sort()).toEqual(["docker-init", "ps", "sleep"]);
    });

    it("OOM-kills a process above the memory limit and keeps the sandbox", async () => {
      driver = testDriver(
        docker,
        dataRoot.path,
        testConfig(image, { memoryBytes: 32 * 1024 * 1024 }),
      );
      const c = await createOk(await specFor());
      // One endless line: tail must hold all of it in memory. The kernel may kill the shell
      // too (a second OOM while tail's memory is still being freed), so the exec's own
      // status is the evidence: SIGKILL either way.
      const r = await sh(c, "head -c 200000000 /dev/zero | tail -n 1 >/dev/null");
      expect(r.status).toBe("exited");
      expect(r.exitCode).toBe(137);
      // Commands go first, the keep-alive last: the same sandbox still runs commands.
      expect((await sh(c, "cat /proc/self/oom_score_adj")).out).toBe("1000\n");
      expect((await sh(c, "echo alive")).out).toBe("alive\n");
      expect((await docker.getContainer(c.instanceId).inspect()).State.Running).toBe(true);
    });
  });

  describe("host paths", () => {
    it("refuses a symlinked user directory and starts nothing", async () => {
      const spec = await specFor();
      const users = join(dataRoot.path, "users");
      const real = join(dataRoot.path, "elsewhere");
      await rename(join(users, uidDirname(spec.uid)), real);
      await symlink(real, join(users, uidDirname(spec.uid)));
      const out = await driver.create(spec, signal());
      expect(out).toMatchObject({ ok: false, reason: "symlink_refused" });
      expect(await containersOfNode(docker, nodeId)).toEqual([]);
    });

    it("refuses a symlinked workspace and a symlinked skills projection", async () => {
      const spec = await specFor();
      const ws = join(dataRoot.path, "users", uidDirname(spec.uid), "workspace");
      await rename(ws, `${ws}.real`);
      await symlink(`${ws}.real`, ws);
      expect(await driver.create(spec, signal())).toMatchObject({
        ok: false,
        reason: "symlink_refused",
      });

      const spec2 = await specFor();
      await mkdir(join(dataRoot.path, "skills", "projections"), { recursive: true });
      await mkdir(join(dataRoot.path, "other-skills"));
      await symlink(
        join(dataRoot.path, "other-skills"),
        join(dataRoot.path, "skills", "projections", uidDirname(spec2.uid)),
      );
      expect(await driver.create(spec2, signal())).toMatchObject({
        ok: false,
        reason: "symlink_refused",
      });
      expect(await containersOfNode(docker, nodeId)).toEqual([]);
    });

    it("refuses a Workdir that is missing or a symlink", async () => {
      const spec = await specFor();
      const missing = { ...spec, workdirPath: `projects/${randomUUID()}` };
      expect(await driver.create(missing, signal())).toMatchObject({
        ok: false,
        reason: "workdir_missing",
      });
      const ws = join(dataRoot.path, "users", uidDirname(spec.uid), "workspace");
      await symlink("/etc", join(ws, "linked"));
      const linked = { ...spec, workdirPath: "linked" };
      expect(await driver.create(linked, signal())).toMatchObject({
        ok: false,
        reason: "symlink_refused",
      });
      expect(await containersOfNode(docker, nodeId)).toEqual([]);
    });
  });

  it("leaves no container when the engine fails to start one", async () => {
    // An image without `sleep`: create succeeds, start fails.
    const empty = "workcell/sandbox-test:no-sleep";
    await importEmptyImage(docker, empty);
    driver = testDriver(docker, dataRoot.path, testConfig(empty));
    await expect(driver.create(await specFor(), signal())).rejects.toThrow();
    expect(await containersOfNode(docker, nodeId)).toEqual([]);
  });
});

/** A rootfs with nothing in it but what the mounts need: no keep-alive binary. */
async function importEmptyImage(docker: Docker, name: string): Promise<void> {
  if (
    await docker
      .getImage(name)
      .inspect()
      .then(
        () => true,
        () => false,
      )
  )
    return;
  const { execFileSync } = await import("node:child_process");
  const { mkdtempSync, mkdirSync, rmSync } = await import("node:fs");
  const dir = mkdtempSync("/tmp/workcell-empty-image-");
  try {
    mkdirSync(join(dir, "home/gem"), { recursive: true });
    mkdirSync(join(dir, "tmp"));
    execFileSync("sh", ["-c", `tar -C ${dir} -c . | docker import - ${name}`]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
