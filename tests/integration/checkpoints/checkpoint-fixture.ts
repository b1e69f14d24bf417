import { mkdirSync } from "node:fs";
import { join } from "node:path";
import {
  type CheckpointStore,
  createCheckpointStore,
  detectCheckpointMode,
} from "../../../agent-host/checkpoints/checkpoint-store.ts";
import { createCheckpointSyscalls } from "../../../agent-host/checkpoints/checkpoint-syscalls.ts";
import { createLibcSyscalls, createPathResolver } from "../../../agent-host/workspace/index.ts";
import { type DataRoot, freshDataRoot } from "../../support/data-root.ts";
import { xfsLoopDataRoot } from "../../support/xfs-loop.ts";

export const UID = "alice";
export const WORKDIR = "projects/0b9f7a1e-1b2c-4d3e-8f90-123456789abc";
export const OTHER_WORKDIR = "projects/1c9f7a1e-1b2c-4d3e-8f90-123456789abc";

/** The two data roots every checkpoint test runs on: default (copy) and XFS (reflink). */
export const STORE_MODES = ["copy", "reflink"] as const;
export type StoreMode = (typeof STORE_MODES)[number];

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
  const root = mode === "reflink" ? await xfsLoopDataRoot() : await freshDataRoot();
  const sys = createLibcSyscalls();
  const cp = createCheckpointSyscalls();
  const detected = detectCheckpointMode({ dataRoot: root.path, sys, cp });
  const store = createCheckpointStore({
    dataRoot: root.path,
    sys,
    resolver: createPathResolver(sys),
    cp,
    mode: detected,
    maxEntries: 100_000,
    maxDepth: 64,
  });
  const path = (uid: string, workdirPath: string) =>
    join(root.path, "users", uid, "workspace", workdirPath);
  const workdir = path(UID, WORKDIR);
  mkdirSync(workdir, { recursive: true, mode: 0o700 });
  return { root, store, workdir, storeDir: join(root.path, "checkpoints", UID), path };
}
