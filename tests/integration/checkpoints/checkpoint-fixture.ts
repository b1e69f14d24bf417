import { join } from "node:path";
import {
  type CheckpointStore,
  createCheckpointStore,
  detectCheckpointMode,
} from "../../../agent-host/checkpoints/checkpoint-store.ts";
import { createCheckpointSyscalls } from "../../../agent-host/checkpoints/checkpoint-syscalls.ts";
import { detectSubvolumes, subvolumeWorkdirs } from "../../../agent-host/checkpoints/subvolumes.ts";
import {
  createLibcSyscalls,
  createPathResolver,
  createUserWorkspaces,
} from "../../../agent-host/workspace/index.ts";
import { btrfsLoopDataRoot } from "../../support/btrfs-loop.ts";
import { type DataRoot, freshDataRoot } from "../../support/data-root.ts";
import { xfsLoopDataRoot } from "../../support/xfs-loop.ts";

export const UID = "alice";
export const WORKDIR = "projects/0b9f7a1e-1b2c-4d3e-8f90-123456789abc";
export const OTHER_WORKDIR = "projects/1c9f7a1e-1b2c-4d3e-8f90-123456789abc";

/**
 * The data roots every checkpoint test runs on: default (copy), XFS (reflink per file) and
 * btrfs with the Workdir a subvolume (snapshots; the node's mode is `reflink` there too).
 */
export const STORE_MODES = ["copy", "reflink", "snapshot"] as const;
export type StoreMode = (typeof STORE_MODES)[number];
/** The data roots whose checkpoints are copied file by file. */
export const PER_FILE_MODES = ["copy", "reflink"] as const;

/** The mode a node reports on each of those data roots. */
export function reportedMode(mode: StoreMode): "copy" | "reflink" {
  return mode === "copy" ? "copy" : "reflink";
}

export async function dataRootFor(mode: StoreMode): Promise<DataRoot> {
  if (mode === "reflink") return xfsLoopDataRoot();
  if (mode === "snapshot") return btrfsLoopDataRoot();
  return freshDataRoot();
}

export interface StoreEnv {
  readonly root: DataRoot;
  readonly store: CheckpointStore;
  /** Absolute path of the Workdir. */
  readonly workdir: string;
  /** Absolute path of the uid's checkpoint directory. */
  readonly storeDir: string;
  path(uid: string, workdirPath: string): string;
}

export async function setupStore(mode: StoreMode): Promise<StoreEnv> {
  const root = await dataRootFor(mode);
  const sys = createLibcSyscalls();
  const cp = createCheckpointSyscalls();
  const detected = detectCheckpointMode({ dataRoot: root.path, sys, cp });
  const subvolumes = detectSubvolumes({ dataRoot: root.path, sys }, "checkpoints");
  if ((mode === "snapshot") !== (subvolumes !== undefined)) {
    throw new Error(`the ${mode} data root ${subvolumes ? "has" : "lacks"} subvolumes`);
  }
  const store = createCheckpointStore({
    dataRoot: root.path,
    sys,
    resolver: createPathResolver(sys),
    cp,
    mode: detected,
    maxEntries: 100_000,
    maxDepth: 64,
    ...(subvolumes === undefined ? {} : { subvolumes }),
  });
  const path = (uid: string, workdirPath: string) =>
    join(root.path, "users", uid, "workspace", workdirPath);
  // Made as the node makes it: 0700, and a subvolume on btrfs.
  const workspaces = createUserWorkspaces({
    dataRoot: root.path,
    sys,
    resolver: createPathResolver(sys),
    ...subvolumeWorkdirs("auto", subvolumes),
  });
  (await workspaces.ensureManagedWorkdir(UID, WORKDIR)).close();
  const workdir = path(UID, WORKDIR);
  return { root, store, workdir, storeDir: join(root.path, "checkpoints", UID), path };
}
