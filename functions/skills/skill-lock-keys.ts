import { type SQL, sql } from "drizzle-orm";

/**
 * The uid's grant lock, exactly as agent-host/skills/skill-locks.ts renders it: a grant
 * change and a projection refresh of one uid serialize on it, which is what makes a refresh
 * queued behind a revoke read the grants after the revoke (docs/architecture.md §6). The two
 * planes share no runtime module outside shared/, so the rule lives in both places and a
 * unit test (tests/unit/skills/lock-keys.test.ts) asserts they render the same SQL.
 */
export const GRANT_LOCK_NAMESPACE = "workcell.skills.grants:";

export function grantLockKey(uid: string): SQL {
  return sql`hashtextextended(${GRANT_LOCK_NAMESPACE + uid}, 0)`;
}
