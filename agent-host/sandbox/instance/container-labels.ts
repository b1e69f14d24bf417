import {
  DEFAULT_FILE_VIEW,
  FILE_VIEW_VALUES,
  type FileView,
} from "../../../shared/paths/file-view.ts";
import type { SandboxInstance } from "../driver.ts";

// Labels are how a container explains itself after the process that created it is gone:
// the reconciler (reconciler.ts) rebuilds the list of a node's sandboxes from them alone
// and compares it with Postgres (docs/architecture.md §4.6). They never carry the uid itself
// (an OIDC subject may be an e-mail address), only its on-disk dirname.
export const LABEL = {
  managedBy: "workcell.managed-by",
  sandboxId: "workcell.sandbox-id",
  generation: "workcell.generation",
  uidDirname: "workcell.uid-dirname",
  runtimeScope: "workcell.runtime-scope",
  workdirPath: "workcell.workdir-path",
  nodeId: "workcell.node-id",
  fileView: "workcell.file-view",
} as const;

/** The managed-by value: containers without it are never touched by Workcell. */
export const MANAGED_BY = "workcell-agent-host";

export type LabelSource = Omit<SandboxInstance, "instanceId" | "running">;

export function sandboxLabels(source: LabelSource): Record<string, string> {
  return {
    [LABEL.managedBy]: MANAGED_BY,
    [LABEL.sandboxId]: source.sandboxId,
    [LABEL.generation]: String(source.generation),
    [LABEL.uidDirname]: source.uidDirname,
    [LABEL.runtimeScope]: source.runtimeScopeId,
    [LABEL.workdirPath]: source.workdirPath,
    [LABEL.nodeId]: source.nodeId,
    [LABEL.fileView]: source.fileView,
  };
}

/** Docker label filters selecting every managed container of one node. */
export function nodeLabelFilters(nodeId: string): string[] {
  return [`${LABEL.managedBy}=${MANAGED_BY}`, `${LABEL.nodeId}=${nodeId}`];
}

/**
 * Decodes a container's labels; undefined when they are not a complete Workcell set (a
 * container someone else labelled by hand), so such a container is never mistaken for
 * a sandbox.
 */
export function parseSandboxLabels(
  labels: Readonly<Record<string, string>> | undefined,
): LabelSource | undefined {
  if (!labels || labels[LABEL.managedBy] !== MANAGED_BY) return undefined;
  const generation = Number(labels[LABEL.generation]);
  const sandboxId = labels[LABEL.sandboxId];
  const uidDirname = labels[LABEL.uidDirname];
  const runtimeScopeId = labels[LABEL.runtimeScope];
  const workdirPath = labels[LABEL.workdirPath];
  const nodeId = labels[LABEL.nodeId];
  if (!Number.isSafeInteger(generation) || generation < 1) return undefined;
  if (!sandboxId || !uidDirname || !runtimeScopeId || !workdirPath || !nodeId) return undefined;
  // Containers created before file views carry no label: they mount the whole workspace.
  const view = labels[LABEL.fileView] ?? DEFAULT_FILE_VIEW;
  if (!(FILE_VIEW_VALUES as readonly string[]).includes(view)) return undefined;
  const fileView = view as FileView;
  return { sandboxId, generation, uidDirname, runtimeScopeId, workdirPath, nodeId, fileView };
}

/** The container's name: unique per generation, so two creators cannot share one. */
export function containerName(sandboxId: string, generation: number): string {
  return `workcell-${sandboxId}-g${generation}`;
}
