import { randomUUID } from "node:crypto";
import { readdir, readFile, readlink, realpath } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { InstanceRef } from "../../../agent-host/sandbox/driver.ts";
import { CHILD_FD } from "../../../agent-host/sandbox/process/bwrap-args.ts";
import { SANDBOX_PATH } from "../../../shared/paths/runtime-paths.ts";
import { type DataRoot, freshDataRoot } from "../../support/data-root.ts";
import { processAlive, processesOfUid, zombieChildrenOf } from "../../support/host-processes.ts";
import { pollUntil } from "../../support/poll-until.ts";
import { type ProcessTierFixture, processTierFixture } from "../../support/process-tier.ts";
import { materializeWorkdir, silentLogger, testConfig } from "./sandbox-fixture.ts";

// The sandbox a process-tier generation keeps built for its next exec (decisions 0076,
// 0088): it is the generation's alone (its owner uid, its cgroup, handed out once), runs
// nothing of any exec until one releases it, the sandboxes cannot reach it, one killed
// while it waits is noticed and the next exec still runs, and a destroy leaves nothing of
// it behind.

const signal = () => AbortSignal.timeout(60_000);
/** SIGPIPE (13) in /proc/<pid>/status's signal masks. */
const SIGPIPE_BIT = 1 << 12;
const config = testConfig("unused");

describe("process tier: the exec standby", () => {
  let dataRoot: DataRoot;
  let fixture: ProcessTierFixture;
  let a: InstanceRef;
  let b: InstanceRef;

  async function create(sandboxId: string, uid: string): Promise<InstanceRef> {
    await materializeWorkdir(dataRoot.path, uid, "work/s");
    const created = await fixture.driver.create(
      {
        sandboxId,
        generation: 1,
        uid,
        runtimeScopeId: randomUUID(),
        workdirPath: "work/s",
        nodeId: "standby-node",
      },
      signal(),
    );
    if (!created.ok) throw new Error(JSON.stringify(created));
    return created.instance;
  }

  beforeAll(async () => {
    dataRoot = await freshDataRoot();
    fixture = await processTierFixture({ dataRoot: dataRoot.path, config, logger: silentLogger });
    a = await create("stby00000001", "ada");
    b = await create("stby00000002", "bob");
  });
  afterAll(async () => {
    await fixture?.cleanup();
    await dataRoot?.remove();
  });

  const sh = async (ref: InstanceRef, script: string) => {
    const out = await fixture.driver.exec(ref, { cmd: ["sh", "-c", script] }, signal());
    if (!out.ok) throw new Error(`exec refused: ${out.reason}`);
    return { ...out.result, out: out.result.stdout.bytes.toString() };
  };
  const owner = async (ref: InstanceRef) =>
    Number(await readFile(join(fixture.stateDir, ref.instanceId, "userns-owner"), "utf8"));
  /** The standby's processes: bwrap's parent (the trampoline) and its blocked sandbox. */
  const standbyPids = async (ref: InstanceRef) => {
    const [pid, sandboxPid] = await fixture.driver.standbyPids(ref.instanceId);
    if (pid === undefined || sandboxPid === undefined) {
      throw new Error(`${ref.instanceId} has no standby`);
    }
    return { pid, sandboxPid };
  };
  const standby = async (ref: InstanceRef) => (await standbyPids(ref)).pid;
  const sorted = (pids: number[]) => [...pids].sort((x, y) => x - y);

  it("is the generation's own: its owner uid, an exec group of its cgroup, blocked before any exec", async () => {
    await sh(a, "true");
    await sh(b, "true");
    const [pidA, pidB] = [await standbyPids(a), await standbyPids(b)];
    expect(pidA.pid).not.toBe(pidB.pid);
    const bwrap = await realpath(fixture.parts.tools.bwrap);
    for (const [{ pid, sandboxPid }, ref, other] of [
      [pidA, a, b],
      [pidB, b, a],
    ] as const) {
      // bwrap's parent runs as the namespace's owner with no capability.
      const status = await readFile(`/proc/${pid}/status`, "utf8");
      expect(/^Uid:\s+(\d+)/m.exec(status)?.[1]).toBe(String(await owner(ref)));
      expect(/^CapEff:\s+(\S+)/m.exec(status)?.[1]).toBe("0000000000000000");
      for (const p of [pid, sandboxPid]) {
        // Every process of it is still bwrap: not the shim, not a command.
        expect(await readlink(`/proc/${p}/exe`)).toBe(bwrap);
        // Every hierarchy it is in (v1: memory, pids, cpu; v2: the one) is an exec group
        // of its own generation, below the tier's parent, and none of the other's.
        const groups = (await readFile(`/proc/${p}/cgroup`, "utf8"))
          .split("\n")
          .filter((line) => line.includes(fixture.cgroupParent));
        expect(groups.length).toBeGreaterThan(0);
        for (const line of groups) {
          expect(line).toMatch(
            new RegExp(`/${fixture.cgroupParent}/${ref.instanceId}/exec-[0-9a-f]+$`),
          );
          expect(line).not.toContain(other.instanceId);
        }
      }
      // The sandbox is blocked reading bwrap's block fd: the mounts are made, nothing runs.
      const [number, fdHex] = (await readFile(`/proc/${sandboxPid}/syscall`, "utf8")).split(" ");
      expect(number).toBe(String(process.arch === "arm64" ? 63 : 0));
      expect(Number.parseInt(fdHex ?? "", 16)).toBe(CHILD_FD.block);
      // And those two are all the generation runs while it waits.
      expect(sorted(await fixture.parts.cgroups.pids(ref.instanceId))).toEqual(
        sorted([pid, sandboxPid]),
      );
    }
  });

  it("runs nothing of an exec until one releases it, and then exactly that exec", async () => {
    const { sandboxPid } = await standbyPids(a);
    // No exec was asked for: the shim has not even started, and no marker exists.
    expect(await readlink(`/proc/${sandboxPid}/exe`)).toBe(
      await realpath(fixture.parts.tools.bwrap),
    );
    const workdir = join(dataRoot.path, "users");
    expect(await findFile(workdir, "released-once")).toBe(false);
    const r = await sh(a, "echo $$ > released-once; echo $$");
    // The command is the sandbox's PID 1 (the shim exec'd it, as bwrap did before).
    expect(r.out).toBe("1\n");
    expect(await findFile(workdir, "released-once")).toBe(true);
    expect(await processAlive(sandboxPid)).toBe(false);
  });

  it("gives the command exactly the exec's environment", async () => {
    const r = await fixture.driver.exec(
      a,
      { cmd: ["env", "-0"], env: { FOO: "bar baz", HOME: "/tmp/h" }, cwd: "/tmp" },
      signal(),
    );
    if (!r.ok) throw new Error(`exec refused: ${r.reason}`);
    const got = r.result.stdout.bytes.toString().split("\0").filter(Boolean).sort();
    expect(got).toEqual(
      [
        `PATH=${SANDBOX_PATH}`,
        "HOME=/tmp/h",
        "USER=gem",
        "LOGNAME=gem",
        "LANG=C.UTF-8",
        "TMPDIR=/tmp",
        "FOO=bar baz",
        "PWD=/tmp",
      ].sort(),
    );
  });

  it("fails a missing or refused cwd, and a missing command, with bwrap's own error, running nothing", async () => {
    await sh(a, "mkdir -p /tmp/locked && chmod 000 /tmp/locked");
    const cases: Array<[{ cwd?: string; cmd?: string[] }, string]> = [
      [{ cwd: "/no/such/dir" }, "bwrap: Can't chdir to /no/such/dir: No such file or directory\n"],
      [{ cwd: "/tmp/locked" }, "bwrap: Can't chdir to /tmp/locked: Permission denied\n"],
      [{ cmd: ["no-such-command"] }, "bwrap: execvp no-such-command: No such file or directory\n"],
    ];
    for (const [request, message] of cases) {
      const out = await fixture.driver.exec(
        a,
        { cmd: ["sh", "-c", "echo ran > cwd-ran"], ...request },
        signal(),
      );
      if (!out.ok) throw new Error(`exec refused: ${out.reason}`);
      expect([out.result.status, out.result.exitCode]).toEqual(["exited", 1]);
      expect(out.result.stderr.bytes.toString()).toBe(message);
    }
    expect(await findFile(join(dataRoot.path, "users"), "cwd-ran")).toBe(false);
    expect(await findFile(join(fixture.stateDir, a.instanceId), "cwd-ran")).toBe(false);
  });

  it("cannot be seen or signalled from inside a sandbox, its own generation's or another's", async () => {
    const pidA = await standby(a);
    for (const ref of [a, b]) {
      const r = await sh(
        ref,
        `if kill -0 ${pidA} 2>/dev/null; then echo reached; else echo refused; fi; ls /proc | grep -x ${pidA} || echo absent`,
      );
      expect(r.out).toBe("refused\nabsent\n");
    }
    // The exec in a took a's standby (a new one waits now); b's exec left a's alone.
    const after = await standby(a);
    expect(after).not.toBe(pidA);
    expect(await processAlive(pidA)).toBe(false);
  });

  it("is handed out once, to its own generation only", async () => {
    const pidA = await standby(a);
    await sh(b, "true");
    await sh(b, "true");
    expect(await standby(a)).toBe(pidA);
    expect(await processAlive(pidA)).toBe(true);
    await sh(a, "true");
    expect(await standby(a)).not.toBe(pidA);
    expect(await processAlive(pidA)).toBe(false);
  });

  it("killed while it waits: noticed, its group removed, and the next exec runs", async () => {
    const pidA = await standby(a);
    process.kill(pidA, "SIGKILL");
    // Straight on, dead or a zombie not yet reaped: either way it must not be used.
    await pollUntil(async () => !(await processAlive(pidA)));
    const r = await sh(a, "echo still-here");
    expect([r.status, r.exitCode, r.out]).toEqual(["exited", 0, "still-here\n"]);
    // One exec group is left in the generation: the new standby's (the killed one's and
    // the exec's were removed).
    const fresh = await standbyPids(a);
    expect(fresh.pid).not.toBe(pidA);
    await pollUntil(async () => (await execGroups(a)).length === 1);
    expect(sorted(await fixture.parts.cgroups.pids(a.instanceId))).toEqual(
      sorted([fresh.pid, fresh.sandboxPid]),
    );
  });

  it("refuses a NUL in an argument or variable: no bwrap option can be smuggled into its command line", async () => {
    const workdir = join(dataRoot.path, "users");
    const smuggle = [
      { cmd: ["sh", "-c", "echo ran > nul-arg", "\0--bind\0/\0/host"] },
      { cmd: ["sh", "-c", "echo ran > nul-env"], env: { X: "1\0--bind\0/\0/host" } },
    ];
    for (const request of smuggle) {
      await expect(fixture.driver.exec(a, request, signal())).rejects.toThrow(/NUL/);
    }
    expect(await findFile(workdir, "nul-arg")).toBe(false);
    expect(await findFile(workdir, "nul-env")).toBe(false);
    // Nothing of those execs is left, and the generation still runs commands.
    await pollUntil(async () => (await execGroups(a)).length <= 1);
    const r = await sh(a, "echo fine");
    expect(r.out).toBe("fine\n");
  });

  it("leaves no process and no group behind when the generation is destroyed", async () => {
    const c = await create("stby00000003", "cy");
    await sh(c, "true");
    const pid = await standby(c);
    const uid = await owner(c);
    expect(await fixture.driver.destroy(c, signal())).toEqual({ ok: true, existed: true });
    expect(await processAlive(pid)).toBe(false);
    expect(await processesOfUid(uid)).toEqual([]);
    expect(await fixture.parts.cgroups.list()).not.toContain(c.instanceId);
    expect(await fixture.driver.standbyPids(c.instanceId)).toEqual([]);
    expect(await fixture.driver.exec(c, { cmd: ["true"] }, signal())).toEqual({
      ok: false,
      reason: "sandbox_gone",
    });
    expect(await processesOfUid(uid)).toEqual([]);
  });

  it("killed with its generation by another process's destroy: gone, and it never runs a command", async () => {
    const g = await create("stby00000007", "hal");
    const { pid, sandboxPid } = await standbyPids(g);
    const uid = await owner(g);
    // What a destroy from another agent-host process does first: the generation's cgroup
    // killed (the standby is in it), whatever this driver holds.
    await fixture.parts.cgroups.kill(g.instanceId);
    expect(await processAlive(pid)).toBe(false);
    expect(await processAlive(sandboxPid)).toBe(false);
    const out = await fixture.driver.exec(
      g,
      { cmd: ["sh", "-c", "echo ran > gone-ran"] },
      signal(),
    );
    expect(out).toEqual({ ok: false, reason: "sandbox_gone" });
    expect(await findFile(join(dataRoot.path, "users"), "gone-ran")).toBe(false);
    expect(await processesOfUid(uid)).toEqual([]);
    expect(await fixture.driver.standbyPids(g.instanceId)).toEqual([]);
    expect(await fixture.driver.destroy(g, signal())).toEqual({ ok: true, existed: true });
  });

  it("is started with every signal at its default and none blocked, and leaves no zombie", async () => {
    // posix_spawn, not Node's spawn (decision 0083): what libuv reset in the child is
    // reset here too (agent-host ignores SIGPIPE; a sandbox must not inherit that).
    // The command's own view, from inside the sandbox. This process ignores SIGPIPE, as
    // agent-host does (Node's default); the command must get it at its default (bash's
    // own SIGQUIT, bit 3, is no concern here).
    const own = await readFile("/proc/self/status", "utf8");
    expect(Number.parseInt(/^SigIgn:\s+(\S+)/m.exec(own)?.[1] ?? "0", 16) & SIGPIPE_BIT).toBe(
      SIGPIPE_BIT,
    );
    const { out } = await sh(a, "cat /proc/self/status");
    expect(Number.parseInt(/^SigIgn:\s+(\S+)/m.exec(out)?.[1] ?? "ffff", 16) & SIGPIPE_BIT).toBe(0);
    expect(/^SigBlk:\s+(\S+)/m.exec(out)?.[1]).toMatch(/^0+$/);
    const pid = await standby(a);
    const status = await readFile(`/proc/${pid}/status`, "utf8");
    expect(/^PPid:\s+(\d+)/m.exec(status)?.[1]).toBe(String(process.pid));
    // agent-host reaps what it starts (libuv does not know these pids): after execs, a
    // standby killed while it waits, and a destroy, none is left a zombie.
    const d = await create("stby00000004", "dee");
    await sh(d, "true");
    process.kill(await standby(d), "SIGKILL");
    await sh(d, "exit 3").catch(() => {});
    expect(await fixture.driver.destroy(d, signal())).toEqual({ ok: true, existed: true });
    await pollUntil(async () => (await zombieChildrenOf(process.pid)).length === 0);
    expect(await zombieChildrenOf(process.pid)).toEqual([]);
  });

  it("waits from the create on (decision 0084): the first exec takes it, and a destroy without any exec leaves nothing", async () => {
    const f = await create("stby00000005", "fay");
    const firstPids = await standbyPids(f);
    const first = firstPids.pid;
    expect(sorted(await fixture.parts.cgroups.pids(f.instanceId))).toEqual(
      sorted([first, firstPids.sandboxPid]),
    );
    const r = await sh(f, "echo first");
    expect(r.out).toBe("first\n");
    expect(await processAlive(first)).toBe(false);
    expect(await standby(f)).not.toBe(first);

    const e = await create("stby00000006", "gus");
    const idle = await standby(e);
    const uid = await owner(e);
    expect(await fixture.driver.destroy(e, signal())).toEqual({ ok: true, existed: true });
    expect(await processAlive(idle)).toBe(false);
    expect(await processesOfUid(uid)).toEqual([]);
    expect(await fixture.parts.cgroups.list()).not.toContain(e.instanceId);
    expect(await fixture.driver.standbyPids(e.instanceId)).toEqual([]);
  });

  /** Exec groups of a generation, from the pids hierarchy (v1) or the unified one (v2). */
  async function execGroups(ref: InstanceRef): Promise<string[]> {
    const base =
      fixture.parts.cgroups.version === "v1"
        ? join("/sys/fs/cgroup/pids", fixture.cgroupParent, ref.instanceId)
        : join("/sys/fs/cgroup", fixture.cgroupParent, ref.instanceId);
    return (await readdir(base, { withFileTypes: true }))
      .filter((e) => e.isDirectory() && e.name.startsWith("exec-"))
      .map((e) => e.name);
  }
});

/** Whether a file named `name` exists anywhere below `dir` (the user's whole tree). */
async function findFile(dir: string, name: string): Promise<boolean> {
  const entries = await readdir(dir, { recursive: true }).catch(() => []);
  return entries.some((entry) => entry === name || entry.endsWith(`/${name}`));
}
