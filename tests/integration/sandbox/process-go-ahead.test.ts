import { execFileSync } from "node:child_process";
import { randomUUID } from "node:crypto";
import { constants } from "node:fs";
import { open, readFile, readlink, realpath, stat } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ContainerRef } from "../../../agent-host/sandbox/driver.ts";
import { CHILD_FD } from "../../../agent-host/sandbox/process/bwrap-args.ts";
import { startTrampoline } from "../../../agent-host/sandbox/process/exec-trampoline.ts";
import {
  GenerationDirs,
  type OpenedGeneration,
} from "../../../agent-host/sandbox/process/generation-dirs.ts";
import {
  type ProcessExecTarget,
  runProcessExec,
} from "../../../agent-host/sandbox/process/process-exec.ts";
import { runtimeWorkdirPath } from "../../../shared/paths/runtime-paths.ts";
import { type DataRoot, freshDataRoot } from "../../support/data-root.ts";
import { processesOfUid } from "../../support/host-processes.ts";
import { pollUntil } from "../../support/poll-until.ts";
import { type ProcessTierFixture, processTierFixture } from "../../support/process-tier.ts";
import { materializeWorkdir, silentLogger, testConfig } from "./sandbox-fixture.ts";

// The go-ahead gate of a process-tier exec (decision 0028): agent-host starts the exec's
// first process, puts it in the exec's cgroups, and only then lets it become bwrap. If the
// cgroup join fails, or the exec is cancelled before the go-ahead was sent, the command
// must never run and no process of the exec may be left on the host. The join is pointed
// at a cgroup.procs that does not exist (it fails) or at a FIFO nobody reads (it never
// completes); everything else is the real tier.

const signal = () => AbortSignal.timeout(60_000);
const workdirPath = "work/gate";
const config = testConfig("unused");

describe("process tier: no go-ahead, no command", () => {
  let dataRoot: DataRoot;
  let fixture: ProcessTierFixture;
  let ref: ContainerRef;
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
    ref = created.container;
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

  /** The real exec target of the generation, with the join sent to `cgroupProcs`. */
  async function target(
    generation: OpenedGeneration,
    execName: string,
    cgroupProcs: string[],
  ): Promise<ProcessExecTarget> {
    // The exec's real group exists (and is what killTree sweeps); only the join misses it.
    await fixture.parts.cgroups.createExec(ref.containerId, execName);
    return {
      trampoline: startTrampoline(fixture.parts, {
        userns: generation.userns,
        cgroupProcs,
        killTree: () => fixture.parts.cgroups.kill(ref.containerId, execName),
        emptyTree: () => fixture.parts.cgroups.emptyExec(ref.containerId, execName),
      }),
      sources: generation.sources,
      mounts: generation.handles,
      cwd: runtimeWorkdirPath(workdirPath),
      env: [],
    };
  }

  async function openGeneration(): Promise<OpenedGeneration> {
    const generation = await dirs.open(ref.containerId, fixture.runtimeDir, "workspace");
    if (!generation) throw new Error("the generation cannot be opened");
    return generation;
  }

  const execDeps = () => ({ logger: silentLogger, config });
  // The driver keeps one trampoline of the generation waiting for its next exec
  // (decision 0076): it is the driver's, not these execs', so it is left out.
  const standby = () => fixture.driver.standbyPid(ref.containerId);
  const othersOfUid = async (uid: number) => {
    const keep = await standby();
    return (await processesOfUid(uid)).filter((pid) => pid !== keep);
  };
  const othersInCgroup = async () => {
    const keep = await standby();
    return (await fixture.parts.cgroups.pids(ref.containerId)).filter((pid) => pid !== keep);
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
      const exec = await target(generation, "exec-join-fails", [
        join(fixture.stateDir, "no-such-cgroup", "cgroup.procs"),
      ]);
      await expect(
        runProcessExec(execDeps(), exec, touch("join-failed"), signal()),
      ).rejects.toMatchObject({ code: "ENOENT" });
      expect(await othersOfUid(generation.userns.owner)).toEqual([]);
      expect(await exists("join-failed")).toBe(false);
      expect(await othersInCgroup()).toEqual([]);
    } finally {
      await generation.close();
    }
  });

  it("never runs the command when the exec is cancelled before the go-ahead, and leaves no process", async () => {
    const generation = await openGeneration();
    const fifo = join(fixture.stateDir, `join-${randomUUID()}`);
    execFileSync("mkfifo", ["-m", "600", fifo]);
    try {
      const exec = await target(generation, "exec-join-hangs", [fifo]);
      const aborting = new AbortController();
      const running = runProcessExec(execDeps(), exec, touch("cancelled"), aborting.signal);
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
      const out = await running;
      expect(out.ok && out.result.status).toBe("cancelled");
      expect(await othersOfUid(generation.userns.owner)).toEqual([]);
      expect(await exists("cancelled")).toBe(false);
    } finally {
      // Let the join's blocked open of the FIFO finish (it holds a thread-pool thread).
      const reader = await open(fifo, constants.O_RDONLY | constants.O_NONBLOCK);
      await reader.close();
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
