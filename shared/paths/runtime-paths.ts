import { normalizeWorkdirPath } from "./normalize-workdir-path.ts";

/** Home of the sandbox user; a private tmpfs inside the sandbox. */
export const SANDBOX_HOME = "/home/gem";

/** Where the caller's whole UserWorkspace is mounted read-write inside a sandbox. */
export const SANDBOX_USER_DATA_MOUNT = `${SANDBOX_HOME}/user-data`;

/** Where the caller's skill projection is mounted read-only inside a sandbox. */
export const SANDBOX_SKILLS_MOUNT = `${SANDBOX_HOME}/skills`;

/**
 * The sandbox-side cwd of a Workdir. The path is normalised first, so a bad one throws
 * instead of producing a cwd outside the user-data mount.
 */
export function runtimeWorkdirPath(workdirPath: string): string {
  return `${SANDBOX_USER_DATA_MOUNT}/${normalizeWorkdirPath(workdirPath)}`;
}

/**
 * True when a path names a sandbox-side location (`/home/gem` or below). Data-plane
 * paths are Workdir-relative with a leading `/`, so such a path is a client confusing
 * the two views; the data plane answers 403 (API.md "Workdir files").
 */
export function isSandboxRuntimePath(path: string): boolean {
  return path === SANDBOX_HOME || path.startsWith(`${SANDBOX_HOME}/`);
}
