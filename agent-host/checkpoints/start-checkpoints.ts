import type { Logger } from "pino";
import type { Db } from "../../shared/db/client.ts";
import type { Owner } from "../workspace/fs-context.ts";
import type { PathResolver } from "../workspace/path-resolver.ts";
import type { FsSyscalls } from "../workspace/syscalls.ts";
import { createCheckpointStore, detectCheckpointMode } from "./checkpoint-store.ts";
import { createCheckpointSyscalls } from "./checkpoint-syscalls.ts";
import { Checkpoints, type CheckpointsDeps } from "./checkpoints.ts";
import { reconcileCheckpoints } from "./reconcile-checkpoints.ts";
import { recoverRestores } from "./restore-workdir.ts";
import type { SubvolumeSyscalls } from "./subvolumes.ts";

/** How often the reconciler compares the store with the rows. */
export const RECONCILE_INTERVAL_MS = 15 * 60_000;
/** Entries and levels a checkpoint copies at most (a Workdir past them is refused). */
export const CHECKPOINT_TREE_LIMITS = { maxEntries: 1_000_000, maxDepth: 256 } as const;

export interface StartCheckpointsDeps {
  readonly db: Db;
  readonly nodeId: string;
  readonly dataRoot: string;
  readonly sys: FsSyscalls;
  readonly resolver: PathResolver;
  readonly owner?: Owner;
  /** The data root's btrfs subvolumes, when it has them (detectSubvolumes). */
  readonly subvolumes?: SubvolumeSyscalls;
  readonly workspaceBytes: (uid: string, signal: AbortSignal) => Promise<number>;
  readonly defaultWorkspaceBytes: number;
  /** Bounds of a manual checkpoint's Execution Lease (the defaults otherwise). */
  readonly lease?: CheckpointsDeps["lease"];
  readonly logger: Logger;
}

export interface StartedCheckpoints {
  readonly checkpoints: Checkpoints;
  readonly report: { mode: "reflink" | "copy"; detail: string };
  stop(): Promise<void>;
}

/**
 * The node's checkpoints, before its data plane serves: probes reflink support, completes
 * or rolls back the restores a previous process was killed in (before any request can see
 * the Workdir), then reconciles the store with the rows now and every RECONCILE_INTERVAL_MS
 * (a failed pass is logged; the node runs on).
 */
export function startCheckpoints(deps: StartCheckpointsDeps): StartedCheckpoints {
  const cp = createCheckpointSyscalls();
  const mode = detectCheckpointMode({ dataRoot: deps.dataRoot, sys: deps.sys, cp });
  const store = createCheckpointStore({
    dataRoot: deps.dataRoot,
    sys: deps.sys,
    resolver: deps.resolver,
    cp,
    mode,
    ...(deps.owner === undefined ? {} : { owner: deps.owner }),
    ...(deps.subvolumes === undefined ? {} : { subvolumes: deps.subvolumes }),
    ...CHECKPOINT_TREE_LIMITS,
  });
  const logger = deps.logger.child({ component: "checkpoints" });
  try {
    const outcomes = recoverRestores(store);
    for (const [restoreId, outcome] of outcomes) {
      logger.warn(
        { restore_id: restoreId, outcome },
        "an interrupted restore was finished at start",
      );
    }
  } catch (err) {
    logger.error(
      { err },
      "interrupted restores could not be recovered; they are retried at the next start",
    );
  }
  const reconcile = () =>
    reconcileCheckpoints({ db: deps.db, store, nodeId: deps.nodeId, logger }).catch(
      (err: unknown) => {
        logger.warn({ err }, "checkpoint reconciliation failed; it runs again later");
      },
    );
  void reconcile();
  const timer = setInterval(reconcile, RECONCILE_INTERVAL_MS);
  timer.unref();
  const checkpoints = new Checkpoints({
    db: deps.db,
    store,
    nodeId: deps.nodeId,
    workspaceBytes: deps.workspaceBytes,
    defaultWorkspaceBytes: deps.defaultWorkspaceBytes,
    ...(deps.lease === undefined ? {} : { lease: deps.lease }),
    logger,
  });
  const detail = checkpointsDetail(mode, deps.subvolumes !== undefined);
  return {
    checkpoints,
    report: { mode, detail },
    async stop() {
      clearInterval(timer);
    },
  };
}

/** The banner's and GET /v1/admin/runtime's words for how this node takes checkpoints. */
export function checkpointsDetail(mode: "reflink" | "copy", subvolumes: boolean): string {
  if (subvolumes) {
    return "btrfs: each managed Workdir is a subvolume and its checkpoints are read-only snapshots (other Workdirs share extents per file)";
  }
  return mode === "reflink"
    ? "FICLONE works on the data root: checkpoints share extents"
    : "the data root's filesystem has no reflinks: checkpoints copy bytes";
}
