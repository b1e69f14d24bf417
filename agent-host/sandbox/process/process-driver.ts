import type { Logger } from "pino";
import { DEFAULT_FILE_VIEW } from "../../../shared/paths/file-view.ts";
import { runtimeWorkdirPath } from "../../../shared/paths/runtime-paths.ts";
import { uidDirname } from "../../../shared/paths/uid-dirname.ts";
import type {
  CreateResult,
  DestroyOutcome,
  ExecFence,
  ExecOutcome,
  ExecRequest,
  InstanceAt,
  InstanceRef,
  SandboxDriver,
  SandboxInstance,
  SandboxSpec,
} from "../driver.ts";
import type { LabelSource } from "../instance/container-labels.ts";
import { startExecCapture } from "../instance/exec-capture.ts";
import { execEnvEntries } from "../instance/exec-env.ts";
import type { HostMounts } from "../instance/host-mounts.ts";
import { openMountDirs } from "../instance/open-mount-dirs.ts";
import type { SandboxConfig } from "../sandbox-config.ts";
import type { SandboxPool } from "../sandbox-pool.ts";
import { PROCESS_ID_PREFIX } from "../sandbox-tier.ts";
import { encodeExecSpec } from "./exec-spec.ts";
import { ExecStandbys, type StandbyPlan } from "./exec-standby.ts";
import { GenerationDirs } from "./generation-dirs.ts";
import { GenerationPool } from "./generation-pool.ts";
import type { HostSpawner } from "./host-spawner.ts";
import { runProcessExec, sandboxStartFailed, trampolineEnded } from "./process-exec.ts";
import type { ProcessTierParts } from "./process-preflight.ts";
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
  tools: { bash: string; bwrap: string; setpriv: string; unshare: string; execShim: string };
  seccompFilter: Buffer;
  /** posix_spawn for the trampolines (decision 0083). */
  spawner: HostSpawner;
  /** mount(2) for the generations' binds and tmpfs (preflight binds it). */
  mounts: HostMounts;
  limits: CgroupLimits & { tmpSizeBytes: number; homeSizeBytes: number };
  config: Pick<SandboxConfig, "execTimeoutMs" | "maxOutputBytesPerStream" | "killGraceMs">;
  /** Blanks kept ready for new generations (the warm pool, decision 0185); default none. */
  poolSize?: number;
};

/** What a node adds to preflight's parts to make the tier's driver. */
export type ProcessDriverSettings = {
  logger: Logger;
  dataRoot: string;
  runtimeDir: string;
  /** The sandbox settings: the generations' limits and each exec's bounds. */
  config: ProcessDriverDeps["limits"] & ProcessDriverDeps["config"];
  poolSize?: number;
};

/** The tier's driver from what preflight found: the one way a node, a test or a bench makes it. */
export function processDriverFrom(
  parts: ProcessTierParts,
  settings: ProcessDriverSettings,
): ProcessDriver {
  const { stateDir, cgroups, tools, seccompFilter, spawner, mounts } = parts;
  return new ProcessDriver({
    ...settings,
    stateDir,
    cgroups,
    tools,
    seccompFilter,
    spawner,
    mounts,
    limits: settings.config,
  });
}

/**
 * The process tier (docs/architecture.md §3): a sandbox generation is a cgroup with its
 * limits plus two private tmpfs (/tmp and /home/gem) that live as long as the
 * generation; each exec is a fresh bubblewrap sandbox inside it. The "container id" is
 * `process-<sandbox id>-g<generation>`, so the manager's fencing, the reaper and the
 * reconciler treat it exactly like a Docker container.
 */
export class ProcessDriver implements SandboxDriver {
  readonly #deps: ProcessDriverDeps;
  readonly #dirs: GenerationDirs;
  readonly #standbys: ExecStandbys;
  readonly #pool: GenerationPool;

  constructor(deps: ProcessDriverDeps) {
    this.#deps = deps;
    this.#dirs = new GenerationDirs({
      stateDir: deps.stateDir,
      mounts: deps.mounts,
      limits: deps.limits,
      holder: { spawner: deps.spawner, tools: deps.tools },
    });
    this.#standbys = new ExecStandbys({ ...deps, dirs: this.#dirs });
    this.#pool = new GenerationPool({
      dirs: this.#dirs,
      logger: deps.logger,
      size: deps.poolSize ?? 0,
    });
  }

  /** The warm pool of blank generations (decision 0185): the manager fills and drains it. */
  get pool(): SandboxPool {
    return this.#pool;
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
        this.#pool
          .take(id, labels, opened.dirs)
          .then((taken) => (taken ? undefined : this.#dirs.create(id, labels, opened.dirs))),
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
    // A new generation is made for a run about to exec in it: its first sandbox is built
    // while the acquire commits and the command's lease statement runs instead of after
    // them (decisions 0084, 0088).
    this.#standbys.replenish(id, standbyPlan(labels));
    // The refill this create leads to waits for that build (decision 0185).
    this.#pool.after(this.#standbys.ready(id));
    return { ok: true, instance: { ...labels, instanceId: id, tier: "process", running: true } };
  }

  async inspect(at: InstanceAt, signal: AbortSignal): Promise<SandboxInstance | undefined> {
    signal.throwIfAborted();
    const { instanceId } = at;
    const [state, grouped] = await Promise.all([
      this.#dirs.state(instanceId),
      this.#deps.cgroups.sandboxExists(instanceId),
    ]);
    if (!state) return undefined;
    return { ...state.labels, instanceId, tier: "process", running: grouped && state.mounted };
  }

  async exec(
    ref: InstanceRef,
    request: ExecRequest,
    signal: AbortSignal,
    fence?: ExecFence,
  ): Promise<ExecOutcome> {
    const env = execEnvEntries(request.env);
    // Refused before a sandbox is spent on it (runProcessExec encodes it again).
    encodeExecSpec({ cmd: request.cmd, cwd: request.cwd ?? "/", env });
    // The generation's state and its pre-built sandbox (decision 0088) are independent:
    // taken at once. The release still waits for the state's word, then the fence's.
    const [inspected, taken] = await Promise.allSettled([
      this.inspect(ref, signal),
      this.#standbys.take(ref.instanceId),
    ]);
    let sandbox = taken.status === "fulfilled" ? taken.value : undefined;
    let plan: StandbyPlan | undefined;
    let handedOver = false;
    try {
      if (inspected.status === "rejected") throw inspected.reason;
      if (taken.status === "rejected") throw taken.reason;
      const current = inspected.value;
      if (
        !current?.running ||
        current.sandboxId !== ref.sandboxId ||
        current.generation !== ref.generation
      ) {
        return { ok: false, reason: "sandbox_gone" };
      }
      plan = standbyPlan(current);
      if (sandbox && sandbox.fileView !== current.fileView) {
        // Built for another view: the container's own labels decide.
        await trampolineEnded(this.#deps, sandbox.trampoline);
        sandbox = undefined;
      }
      // None ready (the first exec of a driver, a concurrent exec, or it died): the same
      // sandbox, built and verified now, on this exec's path.
      if (!sandbox) {
        // Bounded like the exec itself, and cancelled with it: a build that hangs (a join
        // stuck in the kernel) ends as the exec would have, with nothing run.
        const { timeoutMs, finish } = startExecCapture(this.#deps.config, request);
        const stop = AbortSignal.any([signal, AbortSignal.timeout(timeoutMs)]);
        const built = await this.#standbys
          .build(ref.instanceId, plan, stop)
          .catch((error: unknown) => {
            if (stop.aborted) return "stopped" as const;
            throw error;
          });
        if (built === "stopped") return finish(signal.aborted ? "cancelled" : "timed_out", null);
        sandbox = built;
      }
      if (!sandbox) return { ok: false, reason: "sandbox_gone" };
      const prebuilt = sandbox;
      sandbox = undefined;
      handedOver = true;
      const outcome = await runProcessExec(
        this.#deps,
        {
          sandbox: prebuilt,
          cwd: request.cwd ?? runtimeWorkdirPath(current.workdirPath),
          env,
          ...(fence ? { fence } : {}),
        },
        request,
        signal,
      );
      if (!outcome.ok) plan = undefined;
      return outcome;
    } catch (error) {
      plan = undefined;
      // Before runProcessExec nothing of the command can have run (it says so itself after).
      throw handedOver ? error : sandboxStartFailed(error, this.#deps.logger);
    } finally {
      // A standby taken for an exec that never ran is ended (runProcessExec ends its own).
      if (sandbox) await trampolineEnded(this.#deps, sandbox.trampoline).catch(() => {});
      // The next exec's sandbox is built once this one has returned: nothing is built
      // beside an exec's command (decision 0088).
      if (plan) this.#standbys.replenish(ref.instanceId, plan);
    }
  }

  async destroy(ref: InstanceRef, signal: AbortSignal): Promise<DestroyOutcome> {
    const current = await this.inspect(ref, signal);
    if (!current) return { ok: true, existed: false };
    if (current.sandboxId !== ref.sandboxId || current.generation !== ref.generation) {
      return { ok: false, reason: "stale_generation" };
    }
    await this.#remove(ref.instanceId);
    return { ok: true, existed: true };
  }

  async list(nodeId: string, signal: AbortSignal): Promise<SandboxInstance[]> {
    const found: SandboxInstance[] = [];
    for (const id of await this.#dirs.list()) {
      const c = await this.inspect({ instanceId: id, tier: "process" }, signal);
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

  /**
   * The host pids of the generation's ready standby (tests, decision 0088): bwrap's parent
   * (the trampoline), then its sandbox's first process, blocked on `--block-fd`; empty when
   * it has none. Waits for one in the making.
   */
  standbyPids(instanceId: string): Promise<number[]> {
    return this.#standbys.pids(instanceId);
  }

  /** Resolves once the generation's standby in the making is ready (untimed: benches, tests). */
  standbyReady(instanceId: string): Promise<void> {
    return this.#standbys.ready(instanceId);
  }
}

/** What a generation's sandbox is built for, from its own labels. */
function standbyPlan(labels: Pick<LabelSource, "fileView" | "workdirPath">): StandbyPlan {
  return labels.fileView === "workdir"
    ? { fileView: labels.fileView, workdirTarget: runtimeWorkdirPath(labels.workdirPath) }
    : { fileView: labels.fileView };
}

export function processSandboxId(sandboxId: string, generation: number): string {
  return `${PROCESS_ID_PREFIX}${sandboxId}-g${generation}`;
}
