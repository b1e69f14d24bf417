import { lstatSync } from "node:fs";
import { join } from "node:path";
import { and, eq, inArray, lt, or, sql } from "drizzle-orm";
import type { Logger } from "pino";
import type { Db } from "../../shared/db/client.ts";
import { checkpoints } from "../../shared/db/schema.ts";
import { isCanonicalUuid } from "../../shared/paths/index.ts";
import { uidDirname } from "../../shared/paths/uid-dirname.ts";
import { CHECKPOINTS_DIR, type CheckpointStore, TAKING_PREFIX } from "./checkpoint-store.ts";
import { storeDirOf } from "./checkpoints.ts";

/**
 * A directory or row younger than this is left alone: a checkpoint is renamed into place
 * just before its row is inserted, and a reconciler pass must not fall between the two.
 */
export const RECONCILE_GRACE_MS = 10 * 60_000;

export interface ReconcileReport {
  readonly removedDirectories: number;
  readonly removedRows: number;
}

/**
 * Makes the store and the rows agree (docs/architecture.md §16): a checkpoint directory no
 * row names (its thread or the checkpoint was deleted, or a take died between the copy and
 * the row) is removed, a leftover `.taking-` copy too, and a row of this node whose
 * directory is gone is deleted. Both only past RECONCILE_GRACE_MS.
 */
export async function reconcileCheckpoints(deps: {
  db: Db;
  store: CheckpointStore;
  nodeId: string;
  logger: Logger;
  now?: () => number;
}): Promise<ReconcileReport> {
  const now = deps.now ?? Date.now;
  const onDisk = deps.store.listIds();
  const storeDir = join(deps.store.deps.dataRoot, CHECKPOINTS_DIR);
  const old = (dirname: string, name: string) => {
    try {
      return now() - lstatSync(join(storeDir, dirname, name)).ctimeMs > RECONCILE_GRACE_MS;
    } catch {
      return false;
    }
  };
  const ids = [...onDisk.values()].flat().filter(isCanonicalUuid);
  // A directory is named by its own row or by a later checkpoint's store_id (0171).
  const known = new Set(
    ids.length === 0
      ? []
      : (
          await deps.db
            .select({ id: checkpoints.checkpointId, storeId: checkpoints.storeId })
            .from(checkpoints)
            .where(or(inArray(checkpoints.checkpointId, ids), inArray(checkpoints.storeId, ids)))
        ).map((row) => storeDirOf({ checkpointId: row.id, storeId: row.storeId })),
  );
  let removedDirectories = 0;
  for (const [dirname, names] of onDisk) {
    for (const name of names) {
      const orphan = isCanonicalUuid(name) ? !known.has(name) : name.startsWith(TAKING_PREFIX);
      if (!orphan || !old(dirname, name)) continue;
      deps.store.removeByDirname(dirname, name);
      removedDirectories++;
    }
  }
  const rows = await deps.db
    .select({ id: checkpoints.checkpointId, uid: checkpoints.uid, storeId: checkpoints.storeId })
    .from(checkpoints)
    .where(
      and(
        eq(checkpoints.nodeId, deps.nodeId),
        lt(
          checkpoints.createdAt,
          sql`now() - ${RECONCILE_GRACE_MS}::int * interval '1 millisecond'`,
        ),
      ),
    );
  const gone = rows.filter(
    (row) =>
      !(onDisk.get(uidDirname(row.uid)) ?? []).includes(
        storeDirOf({ checkpointId: row.id, storeId: row.storeId }),
      ),
  );
  if (gone.length > 0) {
    await deps.db.delete(checkpoints).where(
      inArray(
        checkpoints.checkpointId,
        gone.map((row) => row.id),
      ),
    );
  }
  if (removedDirectories + gone.length > 0) {
    deps.logger.info(
      { removed_directories: removedDirectories, removed_rows: gone.length },
      "checkpoints reconciled",
    );
  }
  return { removedDirectories, removedRows: gone.length };
}
