import type { FileView } from "../../shared/paths/file-view.ts";
import type { InstanceRef } from "./driver.ts";

/**
 * What acquire hands out: one generation of one sandbox. Every operation through the
 * manager carries it back, and is refused (as a value) once that generation is over.
 */
export type SandboxHandle = InstanceRef & {
  uid: string;
  runtimeScopeId: string;
  workdirPath: string;
  nodeId: string;
  /** The generation's file view: what its sandbox may write. */
  fileView: FileView;
};

/**
 * A handle from its fields. (The Workdir as seen inside the sandbox is
 * runtimeWorkdirPath(handle.workdirPath); the handle does not carry a copy of it.)
 */
export function sandboxHandle(fields: SandboxHandle): SandboxHandle {
  return { ...fields };
}

/** The outcome of an operation fenced by generation (docs/architecture.md §4.3). */
export type FencedOutcome = { ok: true } | { ok: false; reason: "stale_generation" };

/** The handle of a row's generation (adoption: the row is the only record left). */
export function handleFromRow(row: {
  sandboxId: string;
  generation: number;
  instanceId: string | null;
  uid: string;
  runtimeScopeId: string;
  workdirPath: string;
  nodeId: string;
  fileView: FileView;
}): SandboxHandle | undefined {
  if (row.instanceId === null) return undefined;
  return sandboxHandle({
    sandboxId: row.sandboxId,
    generation: row.generation,
    instanceId: row.instanceId,
    uid: row.uid,
    runtimeScopeId: row.runtimeScopeId,
    workdirPath: row.workdirPath,
    nodeId: row.nodeId,
    fileView: row.fileView,
  });
}

/** The refusal every fenced operation returns once the handle's generation is over. */
export const STALE_GENERATION = { ok: false, reason: "stale_generation" } as const;
