import type { FileView } from "../../shared/paths/file-view.ts";
import type { SandboxTier } from "./sandbox-tier.ts";

// The seam between the sandbox lifecycle (sandbox-manager.ts) and an isolation
// technology: Docker (docker-driver.ts, the container tier) and bubblewrap
// (process/process-driver.ts, the process tier), both behind tiered-driver.ts.
//
// A driver knows containers, not rows: it never reads Postgres. Every container it
// creates is named and labelled with (sandbox_id, generation), so the manager can fence
// every operation on the generation it observed and a stale caller can never reach a
// newer sandbox (docs/architecture.md §4.3).

/** What a sandbox is created from: its identity, its Workdir and the node that owns it. */
export type SandboxSpec = {
  sandboxId: string;
  generation: number;
  /** The logical uid (OIDC sub); the driver derives the on-disk dirname from it. */
  uid: string;
  runtimeScopeId: string;
  /** Canonical Workdir path (shared/paths normalizeWorkdirPath); it must already exist. */
  workdirPath: string;
  nodeId: string;
  /** The isolation tier to create it in; the node's default tier when absent. */
  tier?: SandboxTier;
  /** What the sandbox may write (docs/architecture.md §5); `workspace` when absent. */
  fileView?: FileView;
};

/** A container as the driver sees it, decoded from its labels and state. */
export type SandboxInstance = {
  instanceId: string;
  sandboxId: string;
  generation: number;
  uidDirname: string;
  runtimeScopeId: string;
  workdirPath: string;
  nodeId: string;
  /** The file view its mounts were made for (a container labelled before views: `workspace`). */
  fileView: FileView;
  /** True while the keep-alive process runs; exec needs it. */
  running: boolean;
};

/** Refusals that are the caller's data, not a broken engine (shared/errors reasons). */
export type CreateRefusal = "symlink_refused" | "workdir_missing";

export type CreateResult =
  | { ok: true; instance: SandboxInstance }
  | { ok: false; reason: CreateRefusal; detail: string };

export type ExecRequest = {
  /** argv; no shell is implied. */
  cmd: string[];
  /** The only environment the process gets besides the image's own (PATH, HOME). */
  env?: Readonly<Record<string, string>>;
  /** Absolute path inside the sandbox; defaults to the sandbox's Workdir. */
  cwd?: string;
  /** Written to the process's stdin, which is then closed. Without it stdin is empty. */
  stdin?: string | Uint8Array;
  /** Wall-clock limit; clamped to the configured maximum. */
  timeoutMs?: number;
  /** Per-stream cap of bytes kept and streamed; clamped to the configured maximum. */
  maxOutputBytesPerStream?: number;
  /** Streaming: called with each chunk that fits under the cap, in order. */
  onStdout?: (chunk: Buffer) => void;
  onStderr?: (chunk: Buffer) => void;
};

export type CapturedOutput = {
  /** The first `maxOutputBytesPerStream` bytes the process wrote. */
  bytes: Buffer;
  /** Bytes the process wrote in total; `totalBytes - bytes.length` were dropped. */
  totalBytes: number;
  droppedBytes: number;
};

export type ExecStatus = "exited" | "timed_out" | "cancelled";

export type ExecResult = {
  status: ExecStatus;
  /** The process's exit code; null when it was killed for a timeout or a cancel. */
  exitCode: number | null;
  stdout: CapturedOutput;
  stderr: CapturedOutput;
  durationMs: number;
};

export type ExecOutcome =
  | { ok: true; result: ExecResult }
  /** The container is gone or stopped: its generation is over. */
  | { ok: false; reason: "sandbox_gone" }
  /** The caller's fence said no (ExecFence): nothing of the command ran. */
  | { ok: false; reason: "fenced" };

/**
 * The caller's cross-process fence (the generation's touch in Postgres), still in flight
 * when exec is called: a driver may prepare meanwhile, but starts the command only once it
 * resolved true; false (or a rejection) and nothing runs (decision 0083).
 */
export type ExecFence = Promise<boolean>;

/** Which container a caller means: the id plus the identity it must still carry. */
export type InstanceRef = {
  instanceId: string;
  sandboxId: string;
  generation: number;
  /**
   * The file view the caller's handle recorded, when it has one: a driver may prepare the
   * exec for it before it has read the container's own (which still decides).
   */
  fileView?: FileView;
};

export type DestroyOutcome =
  | { ok: true; existed: boolean }
  /** The id names a container of another sandbox or generation; it was left alone. */
  | { ok: false; reason: "stale_generation" };

export interface SandboxDriver {
  /**
   * Creates and starts a sandbox. A refusal or a failure leaves no container behind;
   * engine failures throw (after that cleanup), refusals are values.
   */
  create(spec: SandboxSpec, signal: AbortSignal): Promise<CreateResult>;
  /** The container, or undefined when it no longer exists. */
  inspect(instanceId: string, signal: AbortSignal): Promise<SandboxInstance | undefined>;
  exec(
    ref: InstanceRef,
    request: ExecRequest,
    signal: AbortSignal,
    fence?: ExecFence,
  ): Promise<ExecOutcome>;
  /** Removes the container (running or not) if it still carries `ref`'s identity. */
  destroy(ref: InstanceRef, signal: AbortSignal): Promise<DestroyOutcome>;
  /** Every managed container of a node, running or not. */
  list(nodeId: string, signal: AbortSignal): Promise<SandboxInstance[]>;
}
