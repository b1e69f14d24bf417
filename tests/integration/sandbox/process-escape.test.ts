import { randomUUID } from "node:crypto";
import { readdir, readFile, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { InstanceRef } from "../../../agent-host/sandbox/driver.ts";
import type { ProcessDriver } from "../../../agent-host/sandbox/process/process-driver.ts";
import { type DataRoot, freshDataRoot } from "../../support/data-root.ts";
import { hostProcessesWith } from "../../support/host-processes.ts";
import { pollUntil } from "../../support/poll-until.ts";
import { type ProcessTierFixture, processTierFixture } from "../../support/process-tier.ts";
import { GEM, materializeWorkdir, silentLogger, testConfig } from "./sandbox-fixture.ts";

// The attacker's side of the process tier (docs/architecture.md §3): commands run inside a
// real bubblewrap sandbox try to get out, and the host checks that nothing happened.

const signal = () => AbortSignal.timeout(60_000);
const NODE = "escape-node";

describe("process tier: from inside a sandbox", () => {
  let dataRoot: DataRoot;
  let fixture: ProcessTierFixture;
  let driver: ProcessDriver;
  let ref: InstanceRef;
  let workspace: string;
  const workdirPath = "work/escape";

  beforeAll(async () => {
    dataRoot = await freshDataRoot();
    fixture = await processTierFixture({
      dataRoot: dataRoot.path,
      config: testConfig("unused", { pidsLimit: 48, memoryBytes: 64 * 1024 * 1024 }),
      logger: silentLogger,
    });
    driver = fixture.driver;
    workspace = await materializeWorkdir(dataRoot.path, "mallory", workdirPath);
    // Another user's workspace with a secret in it.
    const other = await materializeWorkdir(dataRoot.path, "victim", "work/private");
    await writeFile(join(other, "work/private/secret.txt"), "victim-secret");
    const created = await driver.create(
      {
        sandboxId: "esc000000001",
        generation: 1,
        uid: "mallory",
        runtimeScopeId: randomUUID(),
        workdirPath,
        nodeId: NODE,
      },
      signal(),
    );
    if (!created.ok) throw new Error(JSON.stringify(created));
    ref = created.instance;
  });
  afterAll(async () => {
    await fixture?.cleanup();
    await dataRoot?.remove();
  });

  /**
   * Processes in the generation's cgroup other than the sandbox the driver keeps built
   * for the next exec (decision 0088; exec-standby.test.ts covers that one).
   */
  async function execPids(): Promise<number[]> {
    const standby = await driver.standbyPids(ref.instanceId);
    return (await fixture.parts.cgroups.pids(ref.instanceId)).filter(
      (pid) => !standby.includes(pid),
    );
  }

  async function sh(
    script: string,
    extra: { timeoutMs?: number; env?: Record<string, string>; stdin?: string } = {},
  ) {
    const out = await driver.exec(ref, { cmd: ["sh", "-c", script], ...extra }, signal());
    if (!out.ok) throw new Error("sandbox gone");
    return {
      ...out.result,
      out: out.result.stdout.bytes.toString(),
      err: out.result.stderr.bytes.toString(),
    };
  }

  it("runs with no_new_privs, a seccomp filter and no capabilities, as 1000 in the Workdir", async () => {
    const r = await sh(
      "grep -E '^(NoNewPrivs|Seccomp|CapEff|CapPrm|CapBnd):' /proc/self/status; id -u; id -g; pwd",
    );
    expect(r.out).toContain("NoNewPrivs:\t1");
    expect(r.out).toMatch(/Seccomp:\t2/);
    expect(r.out).toContain("CapEff:\t0000000000000000");
    expect(r.out).toContain("CapBnd:\t0000000000000000");
    expect(r.out).toContain(`1000\n1000\n/home/gem/user-data/${workdirPath}\n`);
  });

  // The exec's cgroups are joined before bwrap clones (the trampoline's go-ahead, decision
  // 0065): the cgroup namespace is rooted at the exec's own group, so the sandbox sees `/`
  // in every hierarchy and learns nothing of the host's layout or the generation's name.
  // Joining after the clone (bwrap 0.8 has no pre-clone gate) would show host paths here.
  it("sees its own cgroup as the root of every hierarchy", async () => {
    const r = await sh("cat /proc/self/cgroup");
    const lines = r.out
      .trim()
      .split("\n")
      .filter((line) => line.length > 0);
    expect(lines.length).toBeGreaterThan(0);
    for (const line of lines) expect(line).toMatch(/^\d+:[^:]*:\/$/);
    expect(r.out).not.toContain(ref.instanceId);
    expect(r.exitCode).toBe(0);
  });

  it("has no network interface but lo", async () => {
    const r = await sh("ls /sys/class/net 2>/dev/null || cat /proc/net/dev");
    const names = r.out
      .split("\n")
      .map((l) => l.trim().split(":")[0])
      .filter((n) => n && !n.startsWith("Inter") && !n.startsWith("face"));
    expect(names).toEqual(["lo"]);
  });

  it("refuses unshare, mount and new namespaces, and nothing changes", async () => {
    const r = await sh(
      "unshare -U true; echo unshare=$?; unshare -n true; echo unsharenet=$?; mount -t tmpfs none /tmp; echo mount=$?; touch /tmp/still-here; ls /tmp",
    );
    expect(r.out).toContain("unshare=1");
    expect(r.out).toContain("unsharenet=1");
    expect(r.out).toContain("mount=");
    expect(r.out).not.toContain("mount=0");
    // The private /tmp is the generation's tmpfs, not a new mount: the file is on the host side.
    const tmpOnHost = await readdir(join(fixture.stateDir, ref.instanceId, "tmp"));
    expect(tmpOnHost).toContain("still-here");
  });

  it("sees neither the host's processes nor another uid's workspace nor the Docker socket", async () => {
    const r = await sh(
      "ls /proc | grep -E '^[0-9]+$' | wc -l; ls /home/gem; ls /var/run/docker.sock /run/docker.sock 2>&1; find / -name secret.txt 2>/dev/null; echo done",
    );
    const [pids] = r.out.split("\n");
    // PID 1 (the shell) and the pipeline's own processes only.
    expect(Number(pids)).toBeLessThan(6);
    expect(r.out).toContain("skills\nuser-data\n");
    expect(r.out).not.toContain("victim-secret");
    expect(r.out).not.toMatch(/secret\.txt/);
    expect(r.out).toMatch(/docker\.sock: No such file or directory/);
  });

  it("gets none of agent-host's environment variables", async () => {
    process.env.WORKCELL_ESCAPE_CANARY = "host-canary-value";
    try {
      const r = await sh("env", { env: { MINE: "yes" } });
      expect(r.out).not.toContain("host-canary-value");
      expect(r.out).toContain("MINE=yes");
      expect(r.out).toContain("PATH=/runtime/");
      expect(r.out).toContain("HOME=/home/gem");
    } finally {
      delete process.env.WORKCELL_ESCAPE_CANARY;
    }
  });

  // Issue 37 item 7: fd 6 (the generation's user namespace, bwrap's --userns) and any
  // descriptor agent-host inherited without close-on-exec from its launcher reached the
  // command. `ls`, a child, lists the shell's descriptors (its own would include the one
  // it reads the directory with; `echo` keeps the shell from exec'ing ls in its place).
  it("starts a command with only stdin, stdout and stderr open, stdin still the exec's", async () => {
    const r = await sh("cat; ls /proc/$$/fd; echo end", { stdin: "from-stdin\n" });
    expect(r.exitCode).toBe(0);
    expect(r.out).toBe("from-stdin\n0\n1\n2\nend\n");
    expect(r.err).toBe("");
  });

  it("keeps /runtime, /home/gem/skills, / and /dev read-only", async () => {
    const before = await readFile(join(fixture.runtimeDir, "etc/passwd"), "utf8");
    const r = await sh(
      "echo x >> /runtime/etc/passwd; echo rt=$?; touch /home/gem/skills/x; echo sk=$?; touch /evil; echo root=$?; touch /dev/shm/x; echo shm=$?",
    );
    expect(r.out).toContain("rt=1");
    expect(r.out).toContain("sk=1");
    expect(r.out).toContain("root=1");
    expect(r.out).toContain("shm=1");
    expect(await readFile(join(fixture.runtimeDir, "etc/passwd"), "utf8")).toBe(before);
  });

  it("mounts the UserWorkspace nosuid,nodev (issue 13 item 5)", async () => {
    // Field 5 of a mountinfo line is the mount point, field 6 its per-mount options.
    const r = await sh("grep ' /home/gem/user-data' /proc/self/mountinfo");
    const mounts = r.out
      .trim()
      .split("\n")
      .map((line) => line.split(" "))
      .filter((f) => f[4] === "/home/gem/user-data" || f[4]?.startsWith("/home/gem/user-data/"));
    expect(mounts.length).toBeGreaterThan(0);
    for (const fields of mounts) {
      expect(fields[5]?.split(",")).toEqual(expect.arrayContaining(["nosuid", "nodev"]));
    }
  });

  it("writes files owned by 1000:1000 on the host, private by default (umask 077)", async () => {
    await sh("echo hello > owned.txt; mkdir owned-dir");
    const file = await stat(join(workspace, workdirPath, "owned.txt"));
    const dir = await stat(join(workspace, workdirPath, "owned-dir"));
    expect([file.uid, file.gid]).toEqual([GEM, GEM]);
    expect(file.mode & 0o777).toBe(0o600);
    expect(dir.mode & 0o777).toBe(0o700);
  });

  it("stops a fork bomb at the pids limit, and the sandbox keeps working", async () => {
    const r = await sh("bomb() { bomb | bomb & }; bomb; sleep 1; echo survived", {
      timeoutMs: 8_000,
    });
    expect(["exited", "timed_out"]).toContain(r.status);
    expect(await execPids()).toEqual([]);
    expect((await sh("echo alive")).out).toBe("alive\n");
  });

  it("OOM-kills a memory hog inside the sandbox; agent-host stays up", async () => {
    const r = await sh("x=a; while true; do x=$x$x; done", { timeoutMs: 20_000 });
    expect(r.status).toBe("exited");
    expect(r.exitCode).toBe(137);
    expect((await sh("echo alive")).out).toBe("alive\n");
  });

  it("leaves no background process after an exec ends, times out or is cancelled", async () => {
    const marker = (n: number) => `${String(4000 + n)}.123`;
    await sh(`sleep ${marker(1)} & echo started`);
    const timedOut = await sh(`sleep ${marker(2)} & sleep ${marker(3)}`, { timeoutMs: 300 });
    expect(timedOut.status).toBe("timed_out");
    const aborting = new AbortController();
    const cancelled = driver.exec(
      ref,
      { cmd: ["sh", "-c", `sleep ${marker(4)} & sleep ${marker(5)}`] },
      aborting.signal,
    );
    await pollUntil(async () => (await hostProcessesWith(marker(5))).length > 0);
    aborting.abort();
    const c = await cancelled;
    expect(c.ok && c.result.status).toBe("cancelled");
    for (let n = 1; n <= 5; n++) expect(await hostProcessesWith(marker(n))).toEqual([]);
    expect(await execPids()).toEqual([]);
  });
});

describe("process tier: destroy", () => {
  it("leaves no process, mount or cgroup of the sandbox on the host", async () => {
    const dataRoot = await freshDataRoot();
    const fixture = await processTierFixture({
      dataRoot: dataRoot.path,
      config: testConfig("unused"),
      logger: silentLogger,
    });
    try {
      await materializeWorkdir(dataRoot.path, "oscar", "work/d");
      const created = await fixture.driver.create(
        {
          sandboxId: "dst000000001",
          generation: 3,
          uid: "oscar",
          runtimeScopeId: randomUUID(),
          workdirPath: "work/d",
          nodeId: NODE,
        },
        signal(),
      );
      if (!created.ok) throw new Error("refused");
      const running = fixture.driver.exec(
        created.instance,
        { cmd: ["sh", "-c", "sleep 4999.5 & sleep 4998.5"] },
        signal(),
      );
      await pollUntil(async () => (await hostProcessesWith("4998.5")).length > 0);
      expect(await fixture.driver.destroy(created.instance, signal())).toEqual({
        ok: true,
        existed: true,
      });
      const ended = await running;
      expect(
        ended.ok && ended.result.status !== "exited" ? "killed" : ended.ok && ended.result.exitCode,
      ).not.toBe(0);
      expect(await hostProcessesWith("4999.5")).toEqual([]);
      expect(await hostProcessesWith("4998.5")).toEqual([]);
      expect(await fixture.parts.cgroups.list()).toEqual([]);
      const mountinfo = await readFile("/proc/self/mountinfo", "utf8");
      expect(mountinfo).not.toContain(created.instance.instanceId);
      expect(await fixture.driver.inspect(created.instance.instanceId, signal())).toBeUndefined();
      expect(await fixture.driver.exec(created.instance, { cmd: ["true"] }, signal())).toEqual({
        ok: false,
        reason: "sandbox_gone",
      });
    } finally {
      await fixture.cleanup();
      await dataRoot.remove();
    }
  });
});
