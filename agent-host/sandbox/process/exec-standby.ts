import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import type { FileView } from "../../../shared/paths/file-view.ts";
import { startTrampoline, type Trampoline, type TrampolineDeps } from "./exec-trampoline.ts";
import type { GenerationDirs } from "./generation-dirs.ts";
import { type ProcessExecDeps, trampolineEnded } from "./process-exec.ts";
import type { SandboxCgroups } from "./sandbox-cgroups.ts";

export type ExecStandbyDeps = TrampolineDeps &
  ProcessExecDeps & {
    cgroups: SandboxCgroups;
    dirs: GenerationDirs;
    runtimeDir: string;
  };

/**
 * One trampoline per generation started ahead of its exec (decision 0076): spawned as the
 * generation's namespace owner and already moved into a fresh exec cgroup of that
 * generation, waiting for its go-ahead. What an exec then no longer waits for is the spawn
 * and the cgroup join (the kernel's RCU grace period, decision 0065); everything that
 * makes the sandbox (bwrap's namespaces, seccomp, mounts and their verification) is still
 * done per exec, after the go-ahead, exactly as without a standby.
 *
 * A standby belongs to one generation (its container id carries the generation) and is
 * handed out once; it holds nothing of the generation but its own pipes and the user
 * namespace's descriptor, and it sits in the generation's cgroup, so a destroy from any
 * process kills it with the rest. One that died while it waited (kill -9, OOM) is dropped
 * and the exec starts a fresh trampoline. Created per driver; no module state.
 */
export class ExecStandbys {
  readonly #deps: ExecStandbyDeps;
  readonly #ready = new Map<string, Promise<Trampoline | undefined>>();
  /** Generations being destroyed: no standby is started for them. */
  readonly #closing = new Set<string>();

  constructor(deps: ExecStandbyDeps) {
    this.#deps = deps;
  }

  /** Starts the generation's standby unless it has one or is being destroyed. */
  replenish(containerId: string, fileView: FileView): void {
    if (this.#closing.has(containerId) || this.#ready.has(containerId)) return;
    const made = this.#start(containerId, fileView).catch((error: unknown) => {
      this.#deps.logger.warn({ container_id: containerId, err: error }, "exec standby not made");
      return undefined;
    });
    this.#ready.set(containerId, made);
    void made.then((standby) => {
      if (!standby) {
        if (this.#ready.get(containerId) === made) this.#ready.delete(containerId);
        return;
      }
      // Died while waiting (killed, OOM, a destroy by another process): forgotten, and
      // its (empty) exec group removed.
      void standby.exited.then(() => {
        if (this.#ready.get(containerId) !== made) return;
        this.#ready.delete(containerId);
        standby.killTree().catch(() => {});
      });
    });
  }

  /** The generation's standby, handed out once; undefined when there is none alive. */
  async take(containerId: string): Promise<Trampoline | undefined> {
    const made = this.#ready.get(containerId);
    if (!made) return undefined;
    this.#ready.delete(containerId);
    const standby = await made;
    if (standby?.alive() && !isZombie(standby.child.pid)) return standby;
    if (standby) await trampolineEnded(this.#deps, standby);
    return undefined;
  }

  /** The standby's host pid (tests: it is the only process an idle generation has). */
  async pid(containerId: string): Promise<number | undefined> {
    const standby = await this.#ready.get(containerId);
    return standby?.alive() ? standby.child.pid : undefined;
  }

  /**
   * Runs `remove` with no standby of the generation left and none started meanwhile:
   * one in the making is awaited, then killed with its exec group.
   */
  async closing<T>(containerId: string, remove: () => Promise<T>): Promise<T> {
    this.#closing.add(containerId);
    try {
      const standby = await this.take(containerId);
      if (standby) await trampolineEnded(this.#deps, standby);
      return await remove();
    } finally {
      this.#closing.delete(containerId);
    }
  }

  async #start(containerId: string, fileView: FileView): Promise<Trampoline | undefined> {
    const { dirs, cgroups } = this.#deps;
    const execName = `exec-${randomBytes(6).toString("hex")}`;
    const generation = await dirs.open(containerId, this.#deps.runtimeDir, fileView);
    if (!generation) return undefined;
    try {
      const cgroupProcs = await cgroups.createExec(containerId, execName);
      const trampoline = startTrampoline(this.#deps, {
        userns: generation.userns,
        cgroupProcs,
        killTree: () => cgroups.kill(containerId, execName),
        emptyTree: () => cgroups.emptyExec(containerId, execName),
      });
      try {
        await trampoline.joined;
      } catch (error) {
        await trampolineEnded(this.#deps, trampoline);
        throw error;
      }
      return trampoline;
    } finally {
      // The trampoline has its own copy of the namespace's descriptor; agent-host keeps
      // none, so nothing here pins the generation's mounts.
      await generation.close();
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
