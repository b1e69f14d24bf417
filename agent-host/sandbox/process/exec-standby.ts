import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import type { FileView } from "../../../shared/paths/file-view.ts";
import { startTrampoline, type TrampolineDeps } from "./exec-trampoline.ts";
import type { GenerationDirs } from "./generation-dirs.ts";
import { type PrebuiltSandbox, prebuildSandbox, stillAsVerified } from "./prebuilt-sandbox.ts";
import { type ProcessExecDeps, trampolineEnded } from "./process-exec.ts";
import type { SandboxCgroups } from "./sandbox-cgroups.ts";

export type ExecStandbyDeps = TrampolineDeps &
  ProcessExecDeps & {
    cgroups: SandboxCgroups;
    dirs: GenerationDirs;
    runtimeDir: string;
  };

/** What a generation's sandbox is built for: its labels' file view and Workdir target. */
export type StandbyPlan = { fileView: FileView; workdirTarget?: string };

type Pending = { made: Promise<PrebuiltSandbox | undefined>; stop: AbortController };

/**
 * One pre-built sandbox per generation, ready before its exec (decisions 0076, 0088): a
 * trampoline spawned as the generation's namespace owner, moved into a fresh exec cgroup
 * of that generation, turned into bwrap, the sandbox built and every mount verified from
 * the host, blocked on `--block-fd` with nothing of any exec in it. An exec then only
 * checks the generation (inspect, fence), hands over its spec and releases it.
 *
 * A standby belongs to one generation (its container id carries the generation) and is
 * handed out once; it holds nothing of the generation in agent-host (the descriptors it
 * was verified against are closed once it is), and all its processes sit in the
 * generation's cgroup, so a destroy from any process kills it with the rest. One that died
 * while it waited, whose sandbox is no longer blocked, or one of whose verified mounts is
 * no longer in place, is dropped and the exec builds one on its path. Created per driver; no module state.
 */
export class ExecStandbys {
  readonly #deps: ExecStandbyDeps;
  readonly #ready = new Map<string, Pending>();
  /** Generations being destroyed: no standby is started for them. */
  readonly #closing = new Set<string>();

  constructor(deps: ExecStandbyDeps) {
    this.#deps = deps;
  }

  /**
   * Starts building the generation's standby unless it has one or is being destroyed.
   * Registered at once, built from the next turn of the event loop (so a caller returning
   * a result is not held up by the spawn).
   */
  replenish(instanceId: string, plan: StandbyPlan): void {
    if (this.#closing.has(instanceId) || this.#ready.has(instanceId)) return;
    const stop = new AbortController();
    const made = new Promise<void>((resolve) => setImmediate(resolve))
      .then(() => this.build(instanceId, plan, stop.signal))
      .catch((error: unknown) => {
        if (!stop.signal.aborted) {
          this.#deps.logger.warn({ container_id: instanceId, err: error }, "exec standby not made");
        }
        return undefined;
      });
    const pending = { made, stop };
    this.#ready.set(instanceId, pending);
    void made.then((standby) => {
      if (!standby) {
        if (this.#ready.get(instanceId) === pending) this.#ready.delete(instanceId);
        return;
      }
      // Died while waiting (killed, OOM, a destroy by another process): forgotten, and
      // its (empty) exec group removed.
      void standby.trampoline.exited.then(() => {
        if (this.#ready.get(instanceId) !== pending) return;
        this.#ready.delete(instanceId);
        standby.trampoline.killTree().catch(() => {});
      });
    });
  }

  /** The generation's standby, handed out once; undefined when there is none usable. */
  async take(instanceId: string): Promise<PrebuiltSandbox | undefined> {
    const pending = this.#ready.get(instanceId);
    if (!pending) return undefined;
    this.#ready.delete(instanceId);
    const standby = await pending.made;
    if (!standby) return undefined;
    if (
      standby.trampoline.alive() &&
      !isZombie(standby.trampoline.child.pid) &&
      stillAsVerified(standby)
    ) {
      return standby;
    }
    await trampolineEnded(this.#deps, standby.trampoline);
    return undefined;
  }

  /**
   * A sandbox of the generation built now (a standby's build, or an exec's own when none
   * was ready): undefined when the generation is gone. On any failure nothing is left.
   */
  async build(
    instanceId: string,
    plan: StandbyPlan,
    stop: AbortSignal,
  ): Promise<PrebuiltSandbox | undefined> {
    const { dirs, cgroups } = this.#deps;
    const execName = `exec-${randomBytes(6).toString("hex")}`;
    const generation = await dirs.open(instanceId, this.#deps.runtimeDir, plan.fileView);
    if (!generation) return undefined;
    try {
      const cgroupProcs = await cgroups
        .createExec(instanceId, execName)
        .catch((error: NodeJS.ErrnoException) => {
          if (error.code === "ENOENT") return undefined;
          throw error;
        });
      if (!cgroupProcs) return undefined;
      const trampoline = startTrampoline(this.#deps, {
        userns: generation.userns,
        cgroupProcs,
        killTree: () => cgroups.kill(instanceId, execName),
        emptyTree: () => cgroups.emptyExec(instanceId, execName),
      });
      try {
        return await prebuildSandbox(
          {
            trampoline,
            generation,
            fileView: plan.fileView,
            execShim: this.#deps.tools.execShim,
            ...(plan.workdirTarget === undefined ? {} : { workdirTarget: plan.workdirTarget }),
          },
          stop,
        );
      } catch (error) {
        await trampolineEnded(this.#deps, trampoline);
        throw error;
      }
    } finally {
      // Verified (or refused): bwrap bound paths, the descriptors were only what to
      // compare with. agent-host keeps none, so nothing here pins the generation's mounts.
      await generation.close();
    }
  }

  /** Resolves once the generation's standby in the making is ready or given up (untimed waits). */
  async ready(instanceId: string): Promise<void> {
    await this.#ready.get(instanceId)?.made;
  }

  /** The host pids of the generation's ready standby: bwrap's parent, then its sandbox. */
  async pids(instanceId: string): Promise<number[]> {
    const standby = await this.#ready.get(instanceId)?.made;
    const pid = standby?.trampoline.child.pid;
    if (!standby || pid === undefined || !standby.trampoline.alive()) return [];
    return [pid, standby.sandboxPid];
  }

  /**
   * Runs `remove` with no standby of the generation left and none started meanwhile:
   * one in the making is stopped, then killed with its exec group.
   */
  async closing<T>(instanceId: string, remove: () => Promise<T>): Promise<T> {
    this.#closing.add(instanceId);
    try {
      this.#ready.get(instanceId)?.stop.abort();
      const standby = await this.take(instanceId);
      if (standby) await trampolineEnded(this.#deps, standby.trampoline);
      return await remove();
    } finally {
      this.#closing.delete(instanceId);
    }
  }
}

/**
 * Killed, but not reaped by Node yet (its exit event is still to come). Read synchronously:
 * a procfs file the kernel fills in microseconds (decision 0028).
 */
function isZombie(pid: number | undefined): boolean {
  if (pid === undefined) return true;
  try {
    return /\) [ZX] /.test(readFileSync(`/proc/${pid}/stat`, "utf8"));
  } catch {
    return true;
  }
}
