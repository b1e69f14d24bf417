import type { FileHandle } from "node:fs/promises";
import { lstat, readlink } from "node:fs/promises";
import { setTimeout as sleep } from "node:timers/promises";
import type Docker from "dockerode";
import type { Logger } from "pino";
import type { FileView } from "../../../shared/paths/file-view.ts";
import { normalizeWorkdirPath } from "../../../shared/paths/normalize-workdir-path.ts";
import {
  runtimeWorkdirPath,
  SANDBOX_SKILLS_MOUNT,
  SANDBOX_USER_DATA_MOUNT,
} from "../../../shared/paths/runtime-paths.ts";
import { uidDirname } from "../../../shared/paths/uid-dirname.ts";
import {
  makeContainerEgressDir,
  removeContainerEgressDir,
} from "../../egress/container-egress-dir.ts";
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
import {
  containerName,
  nodeLabelFilters,
  parseSandboxLabels,
} from "../instance/container-labels.ts";
import { createHostMounts, type HostMounts } from "../instance/host-mounts.ts";
import { type OpenedMountDirs, openMountDirs } from "../instance/open-mount-dirs.ts";
import type { SandboxConfig } from "../sandbox-config.ts";
import { containerCreateOptions } from "./container-spec.ts";
import { boundedDockerCall } from "./docker-call.ts";
import { isNotFoundError } from "./docker-errors.ts";
import { type ContainerPids, runDockerExec } from "./docker-exec.ts";
import type { FreezeHolds } from "./frozen-stop.ts";
import { nodeBindStagingDir, stageBinds } from "./staged-binds.ts";

/** Docker answers 409 while another removal of the same container is in progress. */
const REMOVAL_POLL_MS = 50;

export type DockerDriverDeps = {
  docker: Docker;
  logger: Logger;
  /** The node's data root: `users/<uid dirname>/workspace` and `skills/projections/…` below it. */
  dataRoot: string;
  config: SandboxConfig;
  /** The Runtime Assets tree, bound read-only at /runtime (absent: not built yet). */
  runtimeDir?: string | undefined;
  /**
   * This node's id: each create stages its host binds below this node's own root-only
   * directory (staged-binds.ts), which agent-host sweeps at start.
   */
  nodeId: string;
  /** mount(2)/umount2(2) for the staged binds (absent: glibc's, bound here). */
  mounts?: HostMounts;
  /**
   * Node-local root of the containers' egress directories (decision 0117): each container
   * gets one, bound read-only, for its runs' proxy sockets. Absent: no such bind.
   */
  egressRoot?: string | undefined;
};

export class DockerDriver implements SandboxDriver {
  readonly #deps: DockerDriverDeps;
  readonly #mounts: HostMounts;
  /** Each live container's init pid and pid namespace (docker-exec.ts endLeftovers). */
  readonly #containerPids = new Map<string, ContainerPids>();
  /** Stops holding a container's cgroup frozen (frozen-stop.ts, decision 0179). */
  readonly #freezeHolds: FreezeHolds = new Map();

  constructor(deps: DockerDriverDeps) {
    this.#deps = deps;
    this.#mounts = deps.mounts ?? createHostMounts();
  }

  async create(spec: SandboxSpec, signal: AbortSignal): Promise<CreateResult> {
    const dirname = uidDirname(spec.uid);
    const workdirPath = normalizeWorkdirPath(spec.workdirPath);
    // Checked no-follow through the workspace fd; inside the sandbox the cwd resolves in
    // the container's own mount namespace, where a symlink cannot reach the host.
    const opened = await openMountDirs(this.#deps.dataRoot, dirname, workdirPath);
    if (!opened.ok) return opened;
    try {
      // Docker gets root-only paths bound from those descriptors, never a path through
      // the user's directories (staged-binds.ts says why).
      const staged = await stageBinds(
        nodeBindStagingDir(this.#deps.dataRoot, this.#deps.nodeId),
        containerName(spec.sandboxId, spec.generation),
        opened.dirs,
        signal,
        this.#mounts,
      );
      try {
        return await this.#createContainer(
          { ...spec, workdirPath, uidDirname: dirname },
          opened.dirs,
          staged.paths,
          signal,
        );
      } finally {
        await staged.release();
      }
    } finally {
      await opened.close();
    }
  }

  async #createContainer(
    spec: SandboxSpec & { uidDirname: string },
    opened: OpenedMountDirs,
    staged: Record<keyof OpenedMountDirs, string>,
    signal: AbortSignal,
  ): Promise<CreateResult> {
    const { docker, config } = this.#deps;
    const name = containerName(spec.sandboxId, spec.generation);
    const log = this.#deps.logger.child({
      sandbox_id: spec.sandboxId,
      generation: spec.generation,
    });
    const { egressRoot } = this.#deps;
    const egressHostPath =
      egressRoot === undefined ? undefined : await makeContainerEgressDir(egressRoot, name);
    const options = containerCreateOptions(
      {
        ...spec,
        ...(egressHostPath === undefined ? {} : { egressHostPath }),
        workspaceHostPath: staged.workspace,
        skillsHostPath: staged.skills,
        workdirHostPath: staged.workdir,
        ...(this.#deps.runtimeDir === undefined ? {} : { runtimeHostPath: this.#deps.runtimeDir }),
      },
      config,
    );
    const call = <T>(purpose: string, run: (bounded: AbortSignal) => Promise<T>) =>
      boundedDockerCall({ timeoutMs: config.dockerCallTimeoutMs, purpose }, signal, run);
    try {
      const container = await call("to create the sandbox container", (bounded) =>
        docker.createContainer({ ...options, abortSignal: bounded }),
      );
      await call("to start the sandbox container", (bounded) =>
        container.start({ abortSignal: bounded }),
      );
      const info = await call("to inspect the new sandbox container", (bounded) =>
        container.inspect({ abortSignal: bounded }),
      );
      assertRunning(info);
      const swapped = await firstSwappedMount(info.State.Pid, opened, spec);
      if (swapped === "exited") {
        // The keep-alive died at once (a broken image), not a swapped directory; the
        // engine records the exit a moment later.
        throw new Error(
          "sandbox container exited at start; check that the sandbox image has sleep, /home/gem and user 1000",
        );
      }
      if (swapped !== undefined) {
        log.warn({ mount: swapped }, "host directory changed during create; refusing");
        await this.#removeQuietly(name);
        await this.#removeEgressDir(name);
        return {
          ok: false,
          reason: "symlink_refused",
          detail: `${swapped} changed while the sandbox was created`,
        };
      }
      const created = toSandboxContainer(info.Id, info.Config.Labels, info.State.Running);
      if (!created) throw new Error(`container ${info.Id} lost its labels`);
      // Known from now on, so a stop finds the container's cgroup without Docker (0179).
      const pidNamespace = await readlink(`/proc/${info.State.Pid}/ns/pid`).catch(() => "");
      if (pidNamespace !== "") {
        this.#containerPids.set(info.Id, { initPid: info.State.Pid, pidNamespace });
      }
      log.info({ container_id: info.Id }, "sandbox container started");
      return { ok: true, instance: created };
    } catch (error) {
      // By name, not id: the create may have succeeded in the engine after our request
      // was aborted or its answer lost, and then we never learned the id.
      await this.#removeQuietly(name);
      await this.#removeEgressDir(name);
      throw error;
    }
  }

  async #removeEgressDir(name: string): Promise<void> {
    const root = this.#deps.egressRoot;
    if (root === undefined) return;
    await removeContainerEgressDir(root, name).catch((error: unknown) =>
      this.#deps.logger.warn({ err: error, container: name }, "could not remove egress directory"),
    );
  }

  async #removeQuietly(nameOrId: string): Promise<void> {
    // Not the caller's (maybe aborted) signal; one call's bound, not more: with the engine
    // gone this would only hold the run's slot, and the reconcile pass when the tier comes
    // back removes what is left (docs/decisions/0058).
    const signal = AbortSignal.timeout(this.#deps.config.dockerCallTimeoutMs);
    try {
      await this.#deps.docker
        .getContainer(nameOrId)
        .remove({ force: true, v: true, abortSignal: signal });
    } catch (error) {
      if (!isNotFoundError(error)) {
        this.#deps.logger.error({ err: error, container: nameOrId }, "could not remove container");
      }
    }
  }

  /** Every Docker call of the driver: the caller's signal and the per-call bound. */
  #call<T>(purpose: string, signal: AbortSignal, run: (bounded: AbortSignal) => Promise<T>) {
    return boundedDockerCall(
      { timeoutMs: this.#deps.config.dockerCallTimeoutMs, purpose },
      signal,
      run,
    );
  }

  async inspect(at: InstanceAt, signal: AbortSignal): Promise<SandboxInstance | undefined> {
    const containerId = at.instanceId; // this tier's instance id is the Docker container id
    try {
      const info = await this.#call("to inspect a sandbox container", signal, (bounded) =>
        this.#deps.docker.getContainer(containerId).inspect({ abortSignal: bounded }),
      );
      return toSandboxContainer(info.Id, info.Config.Labels, info.State.Running);
    } catch (error) {
      if (isNotFoundError(error)) return undefined;
      throw error;
    }
  }

  async exec(
    ref: InstanceRef,
    request: ExecRequest,
    signal: AbortSignal,
    fence?: ExecFence,
  ): Promise<ExecOutcome> {
    // The fence's round trip overlaps the exec's create; the start waits for its yes.
    return runDockerExec(
      { ...this.#deps, containerPids: this.#containerPids, freezeHolds: this.#freezeHolds },
      ref,
      request,
      signal,
      fence,
    );
  }

  async destroy(ref: InstanceRef, signal: AbortSignal): Promise<DestroyOutcome> {
    const current = await this.inspect(ref, signal);
    if (!current) return { ok: true, existed: false };
    if (current.sandboxId !== ref.sandboxId || current.generation !== ref.generation) {
      return { ok: false, reason: "stale_generation" };
    }
    const container = this.#deps.docker.getContainer(ref.instanceId);
    this.#containerPids.delete(ref.instanceId);
    for (;;) {
      try {
        await this.#call("to remove a sandbox container", signal, (bounded) =>
          container.remove({ force: true, v: true, abortSignal: bounded }),
        );
        await this.#removeEgressDir(containerName(ref.sandboxId, ref.generation));
        return { ok: true, existed: true };
      } catch (error) {
        if (isNotFoundError(error)) {
          await this.#removeEgressDir(containerName(ref.sandboxId, ref.generation));
          return { ok: true, existed: true };
        }
        // 409: a concurrent removal (the reconciler, a second destroy) is under way;
        // ours is done when it is.
        if ((error as { statusCode?: number }).statusCode !== 409) throw error;
        await sleep(REMOVAL_POLL_MS, undefined, { signal });
      }
    }
  }

  async list(nodeId: string, signal: AbortSignal): Promise<SandboxInstance[]> {
    const found = await this.#call("to list this node's sandbox containers", signal, (bounded) =>
      this.#deps.docker.listContainers({
        all: true,
        filters: { label: nodeLabelFilters(nodeId) },
        abortSignal: bounded,
      }),
    );
    return found.flatMap((c) => toSandboxContainer(c.Id, c.Labels, c.State === "running") ?? []);
  }
}

/** Started and already dead (e.g. the image has no `sleep`): an engine-side failure. */
function assertRunning(info: Docker.ContainerInspectInfo): void {
  if (info.State.Running) return;
  const why = info.State.Error ? `: ${info.State.Error}` : "";
  throw new Error(
    `sandbox container exited at start (exit ${info.State.ExitCode}${why}); check that the sandbox image has sleep, /home/gem and user 1000`,
  );
}

function toSandboxContainer(
  containerId: string,
  labels: Record<string, string> | undefined,
  running: boolean,
): SandboxInstance | undefined {
  const parsed = parseSandboxLabels(labels);
  return parsed && { ...parsed, instanceId: containerId, tier: "container", running };
}

/**
 * Which bind mount, if any, is not the directory we opened: stat through the
 * container's root (/proc/<pid>/root, as root on the host) and compare device and
 * inode with the open handles.
 */
async function firstSwappedMount(
  initPid: number,
  opened: OpenedMountDirs,
  spec: { workdirPath: string; fileView?: FileView },
): Promise<string | "exited" | undefined> {
  // The binds were staged from these descriptors (staged-binds.ts); checked anyway, so
  // that a mistake there, or a mount made by someone else, still refuses the sandbox.
  const checks: Array<readonly [string, FileHandle]> = [
    [SANDBOX_USER_DATA_MOUNT, opened.workspace],
    [SANDBOX_SKILLS_MOUNT, opened.skills],
    ...(spec.fileView === "workdir"
      ? [[runtimeWorkdirPath(spec.workdirPath), opened.workdir] as const]
      : []),
  ];
  for (const [target, handle] of checks) {
    const [inside, expected] = await Promise.all([
      lstat(`/proc/${initPid}/root${target}`).catch(() => undefined),
      handle.stat(),
    ]);
    if (inside && inside.dev === expected.dev && inside.ino === expected.ino) continue;
    const alive = await lstat(`/proc/${initPid}/root/`).then(
      () => true,
      () => false,
    );
    return alive ? target : "exited";
  }
  return undefined;
}
