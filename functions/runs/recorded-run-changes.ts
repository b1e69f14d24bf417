import { and, eq, sql } from "drizzle-orm";
import type { RunChange } from "../../shared/contracts/run.ts";
import type { DbOrTransaction } from "../../shared/db/client.ts";
import { MAX_RUN_CHANGES_PER_RUN, runChanges } from "../../shared/db/schema.ts";
import type { RunChangesSource } from "./run-changes.ts";

/**
 * The changes the run worker recorded in `run_changes` when the run ended (root runs that
 * executed; see docs/decisions/0008-run-worker.md, "Run changes"). A run still going, one
 * that never executed, a sub-agent run (its files are in its root run's list) and a run
 * whose node died have none: an empty list.
 *
 * The route has already checked that the run is the caller's; the query is scoped by uid
 * as well, like every tenant query. Sorted by path in byte order (`COLLATE "C"`), the same
 * on PostgreSQL and PGlite whatever the database's locale.
 */
export function recordedRunChanges(db: DbOrTransaction): RunChangesSource {
  return {
    async listChanges(run, signal) {
      signal.throwIfAborted();
      const rows = await db
        .select({ path: runChanges.path, change: runChanges.change, size: runChanges.size })
        .from(runChanges)
        .where(and(eq(runChanges.runId, run.runId), eq(runChanges.uid, run.uid)))
        .orderBy(sql`${runChanges.path} collate "C"`)
        // The writer stores at most this many; the bound keeps the unpaged answer bounded
        // even if a row set was written by hand.
        .limit(MAX_RUN_CHANGES_PER_RUN);
      return rows satisfies RunChange[];
    },
  };
}
