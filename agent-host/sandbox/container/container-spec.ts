import type { ContainerCreateOptions, MountSettings } from "dockerode";
import { DEFAULT_FILE_VIEW, type FileView } from "../../../shared/paths/file-view.ts";
import {
  runtimeWorkdirPath,
  SANDBOX_HOME,
  SANDBOX_PATH,
} from "../../../shared/paths/runtime-paths.ts";
import { containerName, type LabelSource, sandboxLabels } from "../instance/container-labels.ts";
import { type MountKey, sandboxMounts } from "../instance/mount-table.ts";
import type { SandboxConfig } from "../sandbox-config.ts";

/** Everything runs as the image's `gem` user (docs/architecture.md §3). */
export const SANDBOX_USER = "1000:1000";

/**
 * PID 1's child for the container's whole life. Work happens in execs; the keep-alive
 * does nothing and holds no file open. 2^31-1 seconds is the largest value every
 * `sleep` accepts (busybox included).
 */
export const KEEP_ALIVE_CMD = ["sleep", "2147483647"];

export type ContainerSpecInput = Omit<LabelSource, "fileView"> & {
  /** `workdir`: the UserWorkspace read-only and the Workdir bound read-write on top (§5). */
  fileView?: FileView;
  /** Host directories, already verified no-follow by the driver. */
  workspaceHostPath: string;
  skillsHostPath: string;
  /** The Workdir on the host; needed for the `workdir` view only. */
  workdirHostPath?: string;
  /** The Runtime Assets tree (operator-owned), bound read-only at /runtime. */
  runtimeHostPath?: string;
  /** The container's egress directory (container-egress-dir.ts); absent: no such bind. */
  egressHostPath?: string;
};

type Limits = Pick<
  SandboxConfig,
  | "image"
  | "networkMode"
  | "pidsLimit"
  | "memoryBytes"
  | "nanoCpus"
  | "tmpSizeBytes"
  | "homeSizeBytes"
>;

/**
 * The Docker create request of one sandbox. Pure, so the hardening can be read in one
 * place: each line below is a part of the isolation boundary.
 */
export function containerCreateOptions(
  input: ContainerSpecInput,
  limits: Limits,
): ContainerCreateOptions {
  const fileView = input.fileView ?? DEFAULT_FILE_VIEW;
  if (fileView === "workdir" && input.workdirHostPath === undefined) {
    throw new Error("the workdir file view needs the Workdir's host path");
  }
  return {
    name: containerName(input.sandboxId, input.generation),
    Image: limits.image,
    // Replace any entrypoint the image has: the sandbox must not run image code as its
    // main process, only the inert keep-alive.
    Entrypoint: [KEEP_ALIVE_CMD[0] as string],
    Cmd: KEEP_ALIVE_CMD.slice(1),
    User: SANDBOX_USER,
    WorkingDir: runtimeWorkdirPath(input.workdirPath),
    // No environment from agent-host ever reaches a sandbox: only PATH, which puts the
    // Runtime Assets first (the image's own tools come after them).
    Env: [`PATH=${SANDBOX_PATH}`],
    Labels: sandboxLabels({ ...input, fileView }),
    AttachStdin: false,
    AttachStdout: false,
    AttachStderr: false,
    Tty: false,
    OpenStdin: false,
    HostConfig: {
      // The mount table's container binds (mount-table.ts); Docker mounts by target
      // depth, so the Workdir lands on top of the read-only UserWorkspace.
      Mounts: containerBinds(input, fileView),
      // Private, size-bounded scratch. Docker's tmpfs default is noexec; agents need to
      // run what they build or install under /tmp and ~, and noexec would not stop an
      // interpreter anyway, so exec is allowed. nosuid/nodev still hold.
      Tmpfs: {
        // POSIX message queues are not in §3's list: an empty read-only tmpfs hides the
        // mqueue filesystem Docker mounts there, so nothing can create a queue.
        "/dev/mqueue": "ro,nosuid,nodev,noexec,size=4k",
        "/tmp": `rw,exec,nosuid,nodev,size=${limits.tmpSizeBytes},uid=1000,gid=1000,mode=1777`,
        [SANDBOX_HOME]: `rw,exec,nosuid,nodev,size=${limits.homeSizeBytes},uid=1000,gid=1000,mode=0700`,
      },
      ReadonlyRootfs: true,
      CapDrop: ["ALL"],
      SecurityOpt: ["no-new-privileges:true"],
      Privileged: false,
      // docker-init as PID 1 reaps orphans; without it zombies pile up until the pids
      // limit refuses every fork.
      Init: true,
      PidsLimit: limits.pidsLimit,
      Memory: limits.memoryBytes,
      // Equal to Memory: no swap, so the memory limit is a real limit.
      MemorySwap: limits.memoryBytes,
      NanoCpus: limits.nanoCpus,
      NetworkMode: limits.networkMode,
      // A private IPC namespace with no /dev/shm at all ("none"): §3 lists no shared
      // memory mount, and a writable /dev/shm would be scratch space outside the tmpfs
      // size limits. SysV IPC still works, private to the sandbox.
      IpcMode: "none",
      // The lifecycle is the manager's: no restarts behind its back, no auto-removal
      // that would hide a crashed sandbox from the reconciler.
      RestartPolicy: { Name: "no" },
      AutoRemove: false,
      // The keep-alive prints nothing and exec output is not logged by Docker; "none"
      // just avoids a log file per sandbox.
      LogConfig: { Type: "none", Config: {} },
    },
  };
}

/**
 * The container's bind mounts: the mount table's container rows for this view, each
 * from its host source; a row whose optional source is absent (no Runtime Assets, no
 * egress directory on this node) is not bound.
 */
export function containerBinds(input: ContainerSpecInput, fileView: FileView): MountSettings[] {
  const sources: Partial<Record<MountKey, string>> = {
    workspace: input.workspaceHostPath,
    workdir: input.workdirHostPath,
    skills: input.skillsHostPath,
    runtime: input.runtimeHostPath,
    egress: input.egressHostPath,
  };
  return sandboxMounts("container", fileView, runtimeWorkdirPath(input.workdirPath)).flatMap(
    (mount) => {
      const source = sources[mount.key];
      if (mount.how !== "bind" || source === undefined) return [];
      return [
        { Type: "bind" as const, Source: source, Target: mount.target, ReadOnly: mount.readOnly },
      ];
    },
  );
}
