import { type SQL, sql } from "drizzle-orm";

/**
 * Postgres advisory lock keys of the skills subsystem, single-bigint form (the two-int key
 * space belongs to the migrator and the sandbox store). Each key is a 64-bit hash of a
 * namespaced string, so a uid and a slug never share a key by construction, and two uids
 * share one only by a 64-bit collision, which would merely serialize their refreshes.
 *
 * The control plane takes the grant lock too, when it changes a grant
 * (functions/skills/skill-lock-keys.ts must render the same SQL; a unit test compares).
 */
export const GRANT_LOCK_NAMESPACE = "workcell.skills.grants:";
export const SOURCE_LOCK_NAMESPACE = "workcell.skills.source:";

/** Serializes everything that reads or changes one uid's grants and projection. */
export function grantLockKey(uid: string): SQL {
  return sql`hashtextextended(${GRANT_LOCK_NAMESPACE + uid}, 0)`;
}

/**
 * Guards one slug's source directory: an import swaps it holding the lock exclusively, a
 * refresh copies it holding it shared, so a refresh never copies a half-swapped source and
 * always reads the catalogue row that matches the directory.
 */
export function sourceLockKey(slug: string): SQL {
  return sql`hashtextextended(${SOURCE_LOCK_NAMESPACE + slug}, 0)`;
}

/** Runs `set_config('lock_timeout', …)` for the rest of the transaction. */
export function lockTimeoutSql(ms: number): SQL {
  return sql`select set_config('lock_timeout', ${`${Math.max(1, Math.round(ms))}ms`}, true)`;
}
