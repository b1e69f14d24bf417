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
 * the two views; the data plane answers 403 (docs/api.md "Workdir files").
 */
export function isSandboxRuntimePath(path: string): boolean {
  return path === SANDBOX_HOME || path.startsWith(`${SANDBOX_HOME}/`);
}

/** Where the Runtime Assets tree is mounted read-only in every sandbox (both tiers). */
export const SANDBOX_RUNTIME_MOUNT = "/runtime";

/**
 * PATH inside a sandbox: the Runtime Assets first, so a tool resolves to the verified
 * asset and never to whatever an image or host happens to carry.
 */
export const SANDBOX_PATH = [
  `${SANDBOX_RUNTIME_MOUNT}/usr/local/bin`,
  `${SANDBOX_RUNTIME_MOUNT}/usr/bin`,
  `${SANDBOX_RUNTIME_MOUNT}/usr/sbin`,
  "/usr/local/bin",
  "/usr/bin",
  "/bin",
].join(":");
