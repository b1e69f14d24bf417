import { randomBytes } from "node:crypto";
import type { Logger } from "pino";
import { DEFAULT_FILE_VIEW } from "../../../shared/paths/file-view.ts";
import { runtimeWorkdirPath } from "../../../shared/paths/runtime-paths.ts";
import { uidDirname } from "../../../shared/paths/uid-dirname.ts";
import type { LabelSource } from "../container-labels.ts";
import type {
  ContainerRef,
  CreateResult,
  DestroyOutcome,
  ExecFence,
  ExecOutcome,
  ExecRequest,
  SandboxContainer,
  SandboxDriver,
  SandboxSpec,
} from "../driver.ts";
import { execEnvEntries } from "../exec-env.ts";
import { openMountDirs } from "../open-mount-dirs.ts";
import type { SandboxConfig } from "../sandbox-config.ts";
import { PROCESS_ID_PREFIX } from "../sandbox-tier.ts";
import { ExecStandbys } from "./exec-standby.ts";
import { encodeBwrapArgs, startTrampoline } from "./exec-trampoline.ts";
import { GenerationDirs } from "./generation-dirs.ts";
import type { HostMounts } from "./host-mounts.ts";
import type { HostSpawner } from "./host-spawner.ts";
import { runProcessExec, trampolineEnded } from "./process-exec.ts";
import type { CgroupLimits, SandboxCgroups } from "./sandbox-cgroups.ts";

export type ProcessDriverDeps = {
  logger: Logger;
  /** The node's data root: `users/<uid dirname>/workspace` and `skills/projections/…` below it. */
  dataRoot: string;
  /** Node-local, root-only directory holding one directory per generation (tmpfs mounts, labels). */
  stateDir: string;
  /** The Runtime Assets tree, mounted read-only at /runtime. */
  runtimeDir: string;
  cgroups: SandboxCgroups;
  /** Host tools, resolved by preflight (absolute paths). */
  tools: { bash: string; bwrap: string; setpriv: string };
  seccompFilter: Buffer;
  /** posix_spawn for the trampolines (decision 0083). */
  spawner: HostSpawner;
  /** mount(2) for the generations' binds and tmpfs (preflight binds it). */
  mounts: HostMounts;
  limits: CgroupLimits & { tmpSizeBytes: number; homeSizeBytes: number };
  config: Pick<SandboxConfig, "execTimeoutMs" | "maxOutputBytesPerStream" | "killGraceMs">;
};

/**
 * The process tier (ARCHITECTURE.md §3): a sandbox generation is a cgroup with its
 * limits plus two private tmpfs (/tmp and /home/gem) that live as long as the
 * generation; each exec is a fresh bubblewrap sandbox inside it. The "container id" is
 * `process-<sandbox id>-g<generation>`, so the manager's fencing, the reaper and the
 * reconciler treat it exactly like a Docker container.
 */
export class ProcessDriver implements SandboxDriver {
  readonly #deps: ProcessDriverDeps;
  readonly #dirs: GenerationDirs;
  readonly #standbys: ExecStandbys;

  constructor(deps: ProcessDriverDeps) {
    this.#deps = deps;
    this.#dirs = new GenerationDirs({
      stateDir: deps.stateDir,
      mounts: deps.mounts,
      limits: deps.limits,
    });
    this.#standbys = new ExecStandbys({ ...deps, dirs: this.#dirs });
  }

  async create(spec: SandboxSpec, signal: AbortSignal): Promise<CreateResult> {
    signal.throwIfAborted();
    const dirname = uidDirname(spec.uid);
    const opened = await openMountDirs(this.#deps.dataRoot, dirname, spec.workdirPath);
    if (!opened.ok) return opened;
    const labels: LabelSource = {
      sandboxId: spec.sandboxId,
      generation: spec.generation,
      uidDirname: dirname,
      runtimeScopeId: spec.runtimeScopeId,
      workdirPath: spec.workdirPath,
      nodeId: spec.nodeId,
      fileView: spec.fileView ?? DEFAULT_FILE_VIEW,
    };
    const id = processSandboxId(spec.sandboxId, spec.generation);
    try {
      // Independent: made at once (decision 0061); both settle before a failure is
      // handled, so #remove never races a half-made part.
      const made = await Promise.allSettled([
        this.#dirs.create(id, labels, opened.dirs),
        this.#deps.cgroups.createSandbox(id, this.#deps.limits),
      ]);
      const failed = made.find((m) => m.status === "rejected");
      if (failed) throw failed.reason;
    } catch (error) {
      await this.#remove(id).catch(() => {});
      throw error;
    } finally {
      await opened.close();
    }
    this.#deps.logger.info(
      { sandbox_id: spec.sandboxId, generation: spec.generation, container_id: id },
      "process sandbox created",
    );
    // A new generation is made for a run about to exec in it: its first trampoline's
    // spawn and cgroup join overlap the acquire's commit and the command's lease
    // statement instead of following them (decision 0084; 0076 started none here).
    this.#standbys.replenish(id, labels.fileView);
    return { ok: true, container: { ...labels, containerId: id, running: true } };
  }

  async inspect(containerId: string, signal: AbortSignal): Promise<SandboxContainer | undefined> {
    signal.throwIfAborted();
    const [state, grouped] = await Promise.all([
      this.#dirs.state(containerId),
      this.#deps.cgroups.sandboxExists(containerId),
    ]);
    if (!state) return undefined;
    return { ...state.labels, containerId, running: grouped && state.mounted };
  }

  async exec(
    ref: ContainerRef,
    request: ExecRequest,
    signal: AbortSignal,
    fence?: ExecFence,
  ): Promise<ExecOutcome> {
    const env = execEnvEntries(request.env);
    // Refused before a trampoline is spent on it (runProcessExec checks again).
    encodeBwrapArgs(request.cmd);
    // The generation's state, its descriptors (what every mount must be, re-opened per
    // exec) and the trampoline started ahead of this exec (decision 0076) are independent:
    // taken at once (decision 0086). The go-ahead still waits for the state's word.
    const [inspected, opened, standby] = await Promise.allSettled([
      this.inspect(ref.containerId, signal),
      ref.fileView === undefined
        ? Promise.resolve(undefined)
        : this.#dirs.open(ref.containerId, this.#deps.runtimeDir, ref.fileView),
      this.#standbys.take(ref.containerId),
    ]);
    let generation = opened.status === "fulfilled" ? opened.value : undefined;
    let trampoline = standby.status === "fulfilled" ? standby.value : undefined;
    try {
      if (inspected.status === "rejected") throw inspected.reason;
      if (opened.status === "rejected") throw opened.reason;
      const current = inspected.value;
      if (
        !current?.running ||
        current.sandboxId !== ref.sandboxId ||
        current.generation !== ref.generation
      ) {
        return { ok: false, reason: "sandbox_gone" };
      }
      if (current.fileView !== ref.fileView) {
        // Opened for another view (or none): the container's own decides.
        await generation?.close();
        generation = await this.#dirs.open(
          ref.containerId,
          this.#deps.runtimeDir,
          current.fileView,
        );
      }
      if (!generation) return { ok: false, reason: "sandbox_gone" };
      if (!trampoline) {
        // None ready (the first exec of a driver, a concurrent exec, or it died): the
        // same trampoline, started now.
        const execName = `exec-${randomBytes(6).toString("hex")}`;
        const cgroupProcs = await this.#deps.cgroups
          .createExec(ref.containerId, execName)
          .catch((error: NodeJS.ErrnoException) => {
            if (error.code === "ENOENT") return undefined;
            throw error;
          });
        if (!cgroupProcs) return { ok: false, reason: "sandbox_gone" };
        trampoline = startTrampoline(this.#deps, {
          userns: generation.userns,
          cgroupProcs,
          killTree: () => this.#deps.cgroups.kill(ref.containerId, execName),
          emptyTree: () => this.#deps.cgroups.emptyExec(ref.containerId, execName),
        });
      }
      const execTrampoline = trampoline;
      trampoline = undefined;
      const verified = generation;
      const outcome = await runProcessExec(
        this.#deps,
        {
          trampoline: execTrampoline,
          sources: generation.sources,
          mounts: generation.handles,
          cwd: request.cwd ?? runtimeWorkdirPath(current.workdirPath),
          env,
          ...(current.fileView === "workdir"
            ? { workdirTarget: runtimeWorkdirPath(current.workdirPath) }
            : {}),
          ...(fence ? { fence } : {}),
          afterGoAhead: () => this.#standbys.replenish(ref.containerId, current.fileView),
          // Closed while the command runs; the `finally` below awaits that same close.
          afterVerified: () => void verified.close().catch(() => {}),
        },
        request,
        signal,
      );
      return outcome;
    } finally {
      // A standby taken for an exec that never ran is ended (runProcessExec ends its own).
      if (trampoline) await trampolineEnded(this.#deps, trampoline).catch(() => {});
      await generation?.close();
    }
  }

  async destroy(ref: ContainerRef, signal: AbortSignal): Promise<DestroyOutcome> {
    const current = await this.inspect(ref.containerId, signal);
    if (!current) return { ok: true, existed: false };
    if (current.sandboxId !== ref.sandboxId || current.generation !== ref.generation) {
      return { ok: false, reason: "stale_generation" };
    }
    await this.#remove(ref.containerId);
    return { ok: true, existed: true };
  }

  async list(nodeId: string, signal: AbortSignal): Promise<SandboxContainer[]> {
    const found: SandboxContainer[] = [];
    for (const id of await this.#dirs.list()) {
      const c = await this.inspect(id, signal);
      if (c?.nodeId === nodeId) found.push(c);
    }
    return found;
  }

  /** Every process of the generation killed (verified empty), then its cgroup and tmpfs removed. */
  async #remove(id: string): Promise<void> {
    await this.#standbys.closing(id, async () => {
      const { survivors } = await this.#deps.cgroups.kill(id);
      if (survivors > 0) {
        throw new Error(`process sandbox ${id}: ${survivors} process(es) survived SIGKILL`);
      }
      await this.#dirs.remove(id);
    });
  }

  /** The generation's idle standby trampoline, if it has one (tests, decision 0076). */
  standbyPid(containerId: string): Promise<number | undefined> {
    return this.#standbys.pid(containerId);
  }
}

export function processSandboxId(sandboxId: string, generation: number): string {
  return `${PROCESS_ID_PREFIX}${sandboxId}-g${generation}`;
}
