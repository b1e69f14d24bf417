import { and, asc, eq, sql } from "drizzle-orm";
import type { Db } from "../../shared/db/client.ts";
import { skillGrants, skills } from "../../shared/db/schema/skills.ts";
import { grantLockKey } from "./skill-lock-keys.ts";

export interface GrantedSkill {
  readonly slug: string;
  readonly kind: "builtin" | "shared";
  readonly description: string;
}

/** Result of a grant change: whether the skill exists at all, and whether anything changed. */
export type GrantChange =
  | { readonly found: false }
  | { readonly found: true; readonly changed: boolean };

/** The longest list of uids one fan-out reads; more are refreshed by the run worker on demand. */
export const MAX_FANOUT_UIDS = 10_000;

/**
 * The catalogue and grants as the control plane sees them (Postgres only). A grant change
 * happens inside a transaction holding the uid's advisory lock, the same lock a projection
 * refresh holds while it reads the grants and writes the projection: a refresh either
 * finishes before the change commits (and the change's own refresh follows it) or starts
 * after and reads the new grants. Never a refresh with stale grants after a revoke.
 */
export interface SkillCatalogue {
  /** Builtin and shared skills granted to `uid`, by slug. */
  listGranted(uid: string): Promise<GrantedSkill[]>;
  grant(uid: string, slug: string): Promise<GrantChange>;
  revoke(uid: string, slug: string): Promise<GrantChange>;
  /** Users holding a grant of `slug` (for refreshing them after the skill changed). */
  grantees(slug: string): Promise<string[]>;
}

export function createSkillCatalogue(db: Db): SkillCatalogue {
  return {
    async listGranted(uid) {
      return db
        .select({ slug: skills.slug, kind: skills.kind, description: skills.description })
        .from(skillGrants)
        .innerJoin(skills, eq(skills.slug, skillGrants.slug))
        .where(eq(skillGrants.uid, uid))
        .orderBy(asc(skills.slug));
    },

    async grant(uid, slug) {
      return db.transaction(async (tx) => {
        await tx.execute(sql`select pg_advisory_xact_lock(${grantLockKey(uid)})`);
        // FOR KEY SHARE: the skill cannot be deleted (taking its grants along) meanwhile.
        const [skill] = await tx
          .select({ slug: skills.slug })
          .from(skills)
          .where(eq(skills.slug, slug))
          .for("key share");
        if (skill === undefined) return { found: false } as const;
        const inserted = await tx
          .insert(skillGrants)
          .values({ uid, slug })
          .onConflictDoNothing()
          .returning({ slug: skillGrants.slug });
        return { found: true, changed: inserted.length > 0 } as const;
      });
    },

    async revoke(uid, slug) {
      return db.transaction(async (tx) => {
        await tx.execute(sql`select pg_advisory_xact_lock(${grantLockKey(uid)})`);
        const [skill] = await tx
          .select({ slug: skills.slug })
          .from(skills)
          .where(eq(skills.slug, slug));
        if (skill === undefined) return { found: false } as const;
        const deleted = await tx
          .delete(skillGrants)
          .where(and(eq(skillGrants.uid, uid), eq(skillGrants.slug, slug)))
          .returning({ slug: skillGrants.slug });
        return { found: true, changed: deleted.length > 0 } as const;
      });
    },

    async grantees(slug) {
      const rows = await db
        .select({ uid: skillGrants.uid })
        .from(skillGrants)
        .where(eq(skillGrants.slug, slug))
        .orderBy(asc(skillGrants.uid))
        .limit(MAX_FANOUT_UIDS);
      return rows.map((row) => row.uid);
    },
  };
}
