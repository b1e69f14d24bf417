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
import { GenerationDirs } from "./generation-dirs.ts";
import type { HostMounts } from "./host-mounts.ts";
import { runProcessExec } from "./process-exec.ts";
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
  tools: { sh: string; bwrap: string };
  seccompFilter: Buffer;
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

  constructor(deps: ProcessDriverDeps) {
    this.#deps = deps;
    this.#dirs = new GenerationDirs({
      stateDir: deps.stateDir,
      mounts: deps.mounts,
      limits: deps.limits,
    });
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

  async exec(ref: ContainerRef, request: ExecRequest, signal: AbortSignal): Promise<ExecOutcome> {
    const current = await this.inspect(ref.containerId, signal);
    if (
      !current?.running ||
      current.sandboxId !== ref.sandboxId ||
      current.generation !== ref.generation
    ) {
      return { ok: false, reason: "sandbox_gone" };
    }
    const env = execEnvEntries(request.env);
    const execName = `exec-${randomBytes(6).toString("hex")}`;
    // The generation's descriptors and the exec's cgroup do not depend on each other:
    // made at once (decision 0028). Whichever succeeded is undone if the other did not.
    const [opened, grouped] = await Promise.allSettled([
      this.#dirs.open(ref.containerId, this.#deps.runtimeDir, current.fileView),
      this.#deps.cgroups.createExec(ref.containerId, execName),
    ]);
    const generation = opened.status === "fulfilled" ? opened.value : undefined;
    try {
      if (grouped.status === "rejected") {
        if ((grouped.reason as NodeJS.ErrnoException).code === "ENOENT") {
          return { ok: false, reason: "sandbox_gone" };
        }
        throw grouped.reason;
      }
      if (opened.status === "rejected") throw opened.reason;
      if (!generation) return { ok: false, reason: "sandbox_gone" };
      return await runProcessExec(
        this.#deps,
        {
          sources: generation.sources,
          mounts: generation.handles,
          userns: generation.userns,
          cgroupProcs: grouped.value,
          killTree: () => this.#deps.cgroups.kill(ref.containerId, execName),
          cwd: request.cwd ?? runtimeWorkdirPath(current.workdirPath),
          env,
          ...(current.fileView === "workdir"
            ? { workdirTarget: runtimeWorkdirPath(current.workdirPath) }
            : {}),
        },
        request,
        signal,
      );
    } finally {
      // runProcessExec removed the exec's group; before it ran, this does (idempotent).
      if (grouped.status === "fulfilled" && (opened.status === "rejected" || !generation)) {
        await this.#deps.cgroups.kill(ref.containerId, execName).catch(() => {});
      }
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
    const { survivors } = await this.#deps.cgroups.kill(id);
    if (survivors > 0) {
      throw new Error(`process sandbox ${id}: ${survivors} process(es) survived SIGKILL`);
    }
    await this.#dirs.remove(id);
  }
}

export function processSandboxId(sandboxId: string, generation: number): string {
  return `${PROCESS_ID_PREFIX}${sandboxId}-g${generation}`;
}
