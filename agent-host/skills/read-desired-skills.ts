import { asc, inArray, sql } from "drizzle-orm";
import type { DbTransaction } from "../../shared/db/client.ts";
import { executeRows } from "../../shared/db/execute-rows.ts";
import { skills } from "../../shared/db/schema/skills.ts";
import { skillGrantVersionSql } from "../../shared/db/skill-grant-version.ts";
import type { DesiredSkill } from "./projection-apply.ts";
import { sourceLockKey } from "./skill-locks.ts";

export interface DesiredProjection {
  /**
   * The uid's grant version, read in the statement that reads the grants (one snapshot):
   * whatever commits after it bumps the version past this value (decision 0075).
   */
  readonly grantVersion: string;
  readonly skills: DesiredSkill[];
}

/**
 * The uid's granted skills with their catalogue rows, read under the uid's advisory lock.
 * Each slug's source lock is taken shared before its row is read, in slug order. A source
 * that changes after the grants were read bumps the version, so at worst the next run
 * refreshes once more; never does the version claim more than was read.
 */
export async function readDesiredSkills(
  tx: DbTransaction,
  uid: string,
): Promise<DesiredProjection> {
  // One row even without grants (the left join), carrying the version.
  const rows = await executeRows<{ version: string; slug: string | null }>(
    tx,
    sql`select ${skillGrantVersionSql(uid)} as version, g.slug
        from (select 1) as one left join skill_grants g on g.uid = ${uid}
        order by g.slug`,
  );
  const grantVersion = rows[0]?.version;
  if (grantVersion === undefined) throw new Error("the grant version could not be read");
  const slugs = rows.flatMap((row) => (row.slug === null ? [] : [row.slug]));
  if (slugs.length === 0) return { grantVersion, skills: [] };
  for (const slug of slugs) {
    await tx.execute(sql`select pg_advisory_xact_lock_shared(${sourceLockKey(slug)})`);
  }
  const rowsOfSkills = await tx
    .select({ slug: skills.slug, contentHash: skills.contentHash })
    .from(skills)
    .where(inArray(skills.slug, slugs))
    .orderBy(asc(skills.slug));
  return { grantVersion, skills: rowsOfSkills };
}
