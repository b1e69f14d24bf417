import { join } from "node:path";
import type { CheckpointStore } from "../../../agent-host/checkpoints/checkpoint-store.ts";
import { btrfsLoopDataRoot } from "../../support/btrfs-loop.ts";
import { checkpointStoreOn } from "../../support/checkpoint-store.ts";
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
  const { store, subvolumes, workdir } = await checkpointStoreOn(root, UID, WORKDIR);
  if ((mode === "snapshot") !== (subvolumes !== undefined)) {
    throw new Error(`the ${mode} data root ${subvolumes ? "has" : "lacks"} subvolumes`);
  }
  const path = (uid: string, workdirPath: string) =>
    join(root.path, "users", uid, "workspace", workdirPath);
  return { root, store, workdir, storeDir: join(root.path, "checkpoints", UID), path };
}
