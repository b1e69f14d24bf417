import { join } from "node:path";
import {
  type CheckpointStore,
  createCheckpointStore,
  detectCheckpointMode,
} from "../../agent-host/checkpoints/checkpoint-store.ts";
import { createCheckpointSyscalls } from "../../agent-host/checkpoints/checkpoint-syscalls.ts";
import {
  detectSubvolumes,
  type SubvolumeSyscalls,
  subvolumeWorkdirs,
} from "../../agent-host/checkpoints/subvolumes.ts";
import {
  createLibcSyscalls,
  createPathResolver,
  createUserWorkspaces,
} from "../../agent-host/workspace/index.ts";
import type { DataRoot } from "./data-root.ts";

export type CheckpointStoreOn = {
  readonly store: CheckpointStore;
  /** The mode the node detected on this data root. */
  readonly mode: ReturnType<typeof detectCheckpointMode>;
  /** The btrfs subvolume calls, where Workdirs are subvolumes. */
  readonly subvolumes: SubvolumeSyscalls | undefined;
  /** Absolute path of the Workdir, made as the node makes it (0700; a subvolume on btrfs). */
  readonly workdir: string;
};

/**
 * A checkpoint store on `root` as a node wires it (modes and subvolumes detected, the
 * checkpoint tests' and bench's bounds), and the uid's managed Workdir made through the
 * node's own workspace code: the checkpoint tests and the checkpoint bench start here.
 */
export async function checkpointStoreOn(
  root: DataRoot,
  uid: string,
  workdirPath: string,
): Promise<CheckpointStoreOn> {
  const sys = createLibcSyscalls();
  const cp = createCheckpointSyscalls();
  const mode = detectCheckpointMode({ dataRoot: root.path, sys, cp });
  const subvolumes = detectSubvolumes({ dataRoot: root.path, sys }, "checkpoints");
  const store = createCheckpointStore({
    dataRoot: root.path,
    sys,
    resolver: createPathResolver(sys),
    cp,
    mode,
    maxEntries: 100_000,
    maxDepth: 64,
    ...(subvolumes === undefined ? {} : { subvolumes }),
  });
  const workspaces = createUserWorkspaces({
    dataRoot: root.path,
    sys,
    resolver: createPathResolver(sys),
    ...subvolumeWorkdirs("auto", subvolumes),
  });
  (await workspaces.ensureManagedWorkdir(uid, workdirPath)).close();
  const workdir = join(root.path, "users", uid, "workspace", workdirPath);
  return { store, mode, subvolumes, workdir };
}
