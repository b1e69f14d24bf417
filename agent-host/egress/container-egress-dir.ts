import { mkdir, rm } from "node:fs/promises";
import { join } from "node:path";
import { nodeBindStagingDir } from "../sandbox/container/staged-binds.ts";

// The container tier's way in for the egress proxy (decision 0117): its /tmp is a tmpfs of
// Docker's, invisible from the host, so each container gets one more bind at create, a
// directory of agent-host's (root, 0755) bound read-only at CONTAINER_EGRESS_MOUNT. It is
// empty unless a run with network is executing: then it holds that run's socket directory
// (socket-placement.ts). Nothing inside the container can write to it.

export const CONTAINER_EGRESS_MOUNT = "/.workcell/egress";

/**
 * This node's root of the containers' egress directories, `<dataRoot>/sandbox-egress/<node>`:
 * below the data root like the staged binds (staged-binds.ts), so a Docker engine that
 * only sees the host's paths (an agent-host in a container) binds the same directory.
 */
export function nodeEgressRoot(dataRoot: string, nodeId: string): string {
  // The same rule for the node id as the staging root (one path component).
  nodeBindStagingDir(dataRoot, nodeId);
  return join(dataRoot, "sandbox-egress", nodeId);
}

/** `<root>/<container name>`: node-local, one per container generation. */
export function containerEgressDir(root: string, containerName: string): string {
  return join(root, containerName);
}

/** Made before the container (a leftover of a create that crashed is replaced). */
export async function makeContainerEgressDir(root: string, containerName: string): Promise<string> {
  await mkdir(root, { recursive: true, mode: 0o711 });
  const dir = containerEgressDir(root, containerName);
  await rm(dir, { recursive: true, force: true });
  await mkdir(dir, { mode: 0o755 });
  return dir;
}

export async function removeContainerEgressDir(root: string, containerName: string): Promise<void> {
  await rm(containerEgressDir(root, containerName), { recursive: true, force: true });
}
