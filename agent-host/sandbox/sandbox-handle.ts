import type { FileView } from "../../shared/paths/file-view.ts";
import type { InstanceAt, InstanceRef } from "./driver.ts";
import { tierOfInstanceId } from "./sandbox-tier.ts";

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

/**
 * Where a row's instance is; undefined while it has none. The store edge: the
 * `sandboxes.container_id` column keeps the id alone (its format unchanged, no tier
 * column), so this is the one place the lifecycle reads the tier off a stored id;
 * past it every handle and ref carries `tier` (decision 0176).
 */
export function instanceOfRow(row: { instanceId: string | null }): InstanceAt | undefined {
  if (row.instanceId === null) return undefined;
  return { instanceId: row.instanceId, tier: tierOfInstanceId(row.instanceId) };
}

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
  const at = instanceOfRow(row);
  if (!at) return undefined;
  return sandboxHandle({
    ...at,
    sandboxId: row.sandboxId,
    generation: row.generation,
    uid: row.uid,
    runtimeScopeId: row.runtimeScopeId,
    workdirPath: row.workdirPath,
    nodeId: row.nodeId,
    fileView: row.fileView,
  });
}

/** The refusal every fenced operation returns once the handle's generation is over. */
export const STALE_GENERATION = { ok: false, reason: "stale_generation" } as const;
