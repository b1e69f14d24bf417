import { execFileSync } from "node:child_process";
import { randomUUID } from "node:crypto";
import { constants } from "node:fs";
import { open, readFile, readlink, realpath, stat } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { InstanceRef } from "../../../agent-host/sandbox/driver.ts";
import { CHILD_FD } from "../../../agent-host/sandbox/process/bwrap-args.ts";
import { encodeExecSpec } from "../../../agent-host/sandbox/process/exec-spec.ts";
import {
  startTrampoline,
  type Trampoline,
} from "../../../agent-host/sandbox/process/exec-trampoline.ts";
import {
  GenerationDirs,
  type OpenedGeneration,
} from "../../../agent-host/sandbox/process/generation-dirs.ts";
import { prebuildSandbox } from "../../../agent-host/sandbox/process/prebuilt-sandbox.ts";
import { trampolineEnded } from "../../../agent-host/sandbox/process/process-exec.ts";
import { runtimeWorkdirPath } from "../../../shared/paths/runtime-paths.ts";
import { type DataRoot, freshDataRoot } from "../../support/data-root.ts";
import { processesOfUid } from "../../support/host-processes.ts";
import { pollUntil } from "../../support/poll-until.ts";
import { type ProcessTierFixture, processTierFixture } from "../../support/process-tier.ts";
import { materializeWorkdir, silentLogger, testConfig } from "./sandbox-fixture.ts";

// The go-ahead gate of a process-tier sandbox (decisions 0028, 0088): agent-host starts
// its first process, puts it in the exec's cgroups, and only then lets it become bwrap.
// If the cgroup join fails, or the build is stopped before the go-ahead was sent, no
// command may ever run and no process may be left on the host. The join is pointed at a
// cgroup.procs that does not exist (it fails) or at a FIFO nobody reads (it never
// completes); everything else is the real tier. And a built sandbox released without an
// exec's spec runs nothing: the shim refuses.

const signal = () => AbortSignal.timeout(60_000);
const workdirPath = "work/gate";
const config = testConfig("unused");

describe("process tier: no go-ahead, no command", () => {
  let dataRoot: DataRoot;
  let fixture: ProcessTierFixture;
  let ref: InstanceRef;
  let workdir: string;
  let dirs: GenerationDirs;

  beforeAll(async () => {
    dataRoot = await freshDataRoot();
    fixture = await processTierFixture({ dataRoot: dataRoot.path, config, logger: silentLogger });
    const workspace = await materializeWorkdir(dataRoot.path, "gus", workdirPath);
    workdir = join(workspace, workdirPath);
    const created = await fixture.driver.create(
      {
        sandboxId: "gate00000001",
        generation: 1,
        uid: "gus",
        runtimeScopeId: randomUUID(),
        workdirPath,
        nodeId: "gate-node",
      },
      signal(),
    );
    if (!created.ok) throw new Error(JSON.stringify(created));
    ref = created.instance;
    dirs = new GenerationDirs({
      stateDir: fixture.stateDir,
      mounts: fixture.parts.mounts,
      limits: config,
    });
  });
  afterAll(async () => {
    await fixture?.cleanup();
    await dataRoot?.remove();
  });

  /** A trampoline of the generation with the join sent to `cgroupProcs`. */
  async function trampolineFor(
    generation: OpenedGeneration,
    execName: string,
    cgroupProcs?: string[],
  ): Promise<Trampoline> {
    // The exec's real group exists (and is what killTree sweeps); only the join may miss it.
    const real = await fixture.parts.cgroups.createExec(ref.instanceId, execName);
    return startTrampoline(fixture.parts, {
      userns: generation.userns,
      cgroupProcs: cgroupProcs ?? real,
      killTree: () => fixture.parts.cgroups.kill(ref.instanceId, execName),
      emptyTree: () => fixture.parts.cgroups.emptyExec(ref.instanceId, execName),
    });
  }

  /** The sandbox build as ExecStandbys.build runs it: a failure ends the trampoline. */
  async function build(generation: OpenedGeneration, trampoline: Trampoline, stop: AbortSignal) {
    try {
      return await prebuildSandbox(
        {
          trampoline,
          generation,
          fileView: "workspace",
          execShim: fixture.parts.tools.execShim,
        },
        stop,
      );
    } catch (error) {
      await trampolineEnded(execDeps(), trampoline);
      throw error;
    }
  }

  async function openGeneration(): Promise<OpenedGeneration> {
    const generation = await dirs.open(ref.instanceId, fixture.runtimeDir, "workspace");
    if (!generation) throw new Error("the generation cannot be opened");
    return generation;
  }

  function execDeps() {
    return { logger: silentLogger, config };
  }
  // The driver keeps one sandbox of the generation built for its next exec (decision
  // 0088): it is the driver's, not these tests', so its processes are left out.
  const standby = () => fixture.driver.standbyPids(ref.instanceId);
  const othersOfUid = async (uid: number) => {
    const keep = await standby();
    return (await processesOfUid(uid)).filter((pid) => !keep.includes(pid));
  };
  const othersInCgroup = async () => {
    const keep = await standby();
    return (await fixture.parts.cgroups.pids(ref.instanceId)).filter((pid) => !keep.includes(pid));
  };
  const touch = (name: string) => ({ cmd: ["sh", "-c", `echo ran > ${name}`] });
  const exists = (name: string) =>
    stat(join(workdir, name)).then(
      () => true,
      () => false,
    );

  it("runs the command when the join succeeds (the control: the marker can appear)", async () => {
    const out = await fixture.driver.exec(ref, touch("control"), signal());
    expect(out.ok && out.result.exitCode).toBe(0);
    expect(await exists("control")).toBe(true);
  });

  it("never runs the command when the cgroup join fails, and leaves no process", async () => {
    const generation = await openGeneration();
    try {
      const trampoline = await trampolineFor(generation, "exec-join-fails", [
        join(fixture.stateDir, "no-such-cgroup", "cgroup.procs"),
      ]);
      await expect(build(generation, trampoline, signal())).rejects.toMatchObject({
        code: "ENOENT",
      });
      expect(await othersOfUid(generation.userns.owner)).toEqual([]);
      expect(await exists("join-failed")).toBe(false);
      expect(await othersInCgroup()).toEqual([]);
    } finally {
      await generation.close();
    }
  });

  it("never runs anything when the build is stopped before the go-ahead, and leaves no process", async () => {
    const generation = await openGeneration();
    const fifo = join(fixture.stateDir, `join-${randomUUID()}`);
    execFileSync("mkfifo", ["-m", "600", fifo]);
    try {
      const trampoline = await trampolineFor(generation, "exec-join-hangs", [fifo]);
      const aborting = new AbortController();
      const running = build(generation, trampoline, aborting.signal).then(
        () => "built",
        (error: Error) => error.message,
      );
      // The exec's first process exists, is not bwrap, and sits reading the go-ahead fd
      // (the one that never gets it); only then is the exec cancelled.
      await pollUntil(async () => {
        const [pid, ...more] = await othersOfUid(generation.userns.owner);
        if (pid === undefined || more.length > 0) return false;
        const exe = await readlink(`/proc/${pid}/exe`).catch(() => "");
        const syscall = await readFile(`/proc/${pid}/syscall`, "utf8").catch(() => "");
        return (
          exe === (await realpath(fixture.parts.tools.bash)) && (await waitsOnGo(pid, syscall))
        );
      });
      aborting.abort();
      expect(await running).toMatch(/stopped/);
      expect(await othersOfUid(generation.userns.owner)).toEqual([]);
      expect(await othersInCgroup()).toEqual([]);
    } finally {
      // Let the join's blocked open of the FIFO finish (it holds a thread-pool thread).
      const reader = await open(fifo, constants.O_RDONLY | constants.O_NONBLOCK);
      await reader.close();
      await generation.close();
    }
  });

  it("runs nothing when a built sandbox is released without an exec's spec", async () => {
    const generation = await openGeneration();
    try {
      const released = async (spec: Buffer | undefined) => {
        const sandbox = await build(
          generation,
          await trampolineFor(generation, `exec-nospec-${randomUUID().slice(0, 8)}`),
          signal(),
        );
        const { trampoline } = sandbox;
        const stderr: Buffer[] = [];
        trampoline.child.stderr?.on("data", (c: Buffer) => stderr.push(c));
        trampoline.pipe(CHILD_FD.spec).end(spec);
        trampoline.child.stdin?.end();
        trampoline.pipe(CHILD_FD.block).end("x");
        const exit = await trampoline.exited;
        await trampoline.outputDone;
        await trampolineEnded(execDeps(), trampoline);
        return { exit, stderr: Buffer.concat(stderr).toString() };
      };
      // The control: the same sandbox with a spec runs it.
      const cwd = runtimeWorkdirPath(workdirPath);
      const ran = await released(encodeExecSpec({ ...touch("with-spec"), cwd, env: [] }));
      expect(ran.exit).toEqual({ code: 0, signal: null });
      expect(await exists("with-spec")).toBe(true);
      // No spec at all, and one cut short: the shim exits 125 and nothing ran.
      const whole = encodeExecSpec({ ...touch("no-spec"), cwd, env: [] });
      for (const spec of [undefined, whole.subarray(0, whole.length - 3)]) {
        const out = await released(spec);
        expect(out.exit).toEqual({ code: 125, signal: null });
        expect(out.stderr).toMatch(/nothing was run/);
      }
      expect(await exists("no-spec")).toBe(false);
      expect(await othersOfUid(generation.userns.owner)).toEqual([]);
      expect(await othersInCgroup()).toEqual([]);
    } finally {
      await generation.close();
    }
  });
});

/**
 * Whether `pid` is in a `read` of its go-ahead pipe (/proc/<pid>/syscall: the number,
 * then the fd in hex; the shell may read it through a dup, so the fd's target is compared).
 */
async function waitsOnGo(pid: number, syscall: string): Promise<boolean> {
  const [number, fdHex] = syscall.split(" ");
  if (number !== String(process.arch === "arm64" ? 63 : 0) || fdHex === undefined) return false;
  const fd = Number.parseInt(fdHex, 16);
  const [reading, go] = await Promise.all([
    readlink(`/proc/${pid}/fd/${fd}`).catch(() => "reading"),
    readlink(`/proc/${pid}/fd/${CHILD_FD.go}`).catch(() => "go"),
  ]);
  return reading === go;
}
