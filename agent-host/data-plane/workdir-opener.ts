import type { CapabilityClaims } from "../../shared/capability/capability-claims.ts";
import { isManagedWorkdirPath } from "../../shared/paths/managed-workdir-path.ts";
import type { UserWorkspaces } from "../workspace/user-workspaces.ts";
import type { WorkspaceFs } from "../workspace/workspace-fs.ts";

export interface OpenWorkdirOptions {
  /**
   * Create a managed Workdir (`projects/<uuid>`) that does not exist yet: for writes, and for
   * materialize. A linked Workdir is never created: it must exist (404 otherwise), because
   * making up a directory the user named would hide a mistake.
   */
  readonly create: boolean;
  readonly signal: AbortSignal;
}

/**
 * Opens the Workdir a capability names, in the UserWorkspace of the uid it names. Only the
 * verified claims are used: no part of the request selects the user or the Workdir. The
 * caller closes the returned WorkspaceFs.
 */
export function openWorkdir(
  userWorkspaces: UserWorkspaces,
  claims: CapabilityClaims,
  options: OpenWorkdirOptions,
): Promise<WorkspaceFs> {
  const signalOnly = { signal: options.signal };
  if (options.create && isManagedWorkdirPath(claims.workdir_path)) {
    return userWorkspaces.ensureManagedWorkdir(claims.uid, claims.workdir_path, signalOnly);
  }
  return userWorkspaces.openExistingWorkdir(claims.uid, claims.workdir_path, signalOnly);
}

/** Runs `fn` with the Workdir open and always closes it. */
export async function withWorkdir<T>(
  userWorkspaces: UserWorkspaces,
  claims: CapabilityClaims,
  options: OpenWorkdirOptions,
  fn: (fs: WorkspaceFs) => Promise<T>,
): Promise<T> {
  const fs = await openWorkdir(userWorkspaces, claims, options);
  try {
    return await fn(fs);
  } finally {
    fs.close();
  }
}
