import { asc, count, eq } from "drizzle-orm";
import type { Db } from "../../shared/db/client.ts";
import { skillGrants, skills } from "../../shared/db/schema/skills.ts";

export type CatalogueSkill = {
  readonly slug: string;
  readonly kind: "builtin" | "shared";
  readonly description: string;
  readonly contentHash: string;
  readonly sourceVersion: string | null;
  readonly grantCount: number;
  readonly createdAt: Date;
  readonly updatedAt: Date;
};

/**
 * The whole catalogue for `GET /v1/admin/skills`: every builtin and shared skill with its
 * content version and how many users hold a grant. Bounded by the number of registered
 * skills (admins add them one by one), so it is one unpaged list.
 */
export async function listSkillCatalogue(db: Db): Promise<CatalogueSkill[]> {
  const rows = await db
    .select({
      slug: skills.slug,
      kind: skills.kind,
      description: skills.description,
      contentHash: skills.contentHash,
      sourceVersion: skills.sourceVersion,
      createdAt: skills.createdAt,
      updatedAt: skills.updatedAt,
      grantCount: count(skillGrants.uid),
    })
    .from(skills)
    .leftJoin(skillGrants, eq(skillGrants.slug, skills.slug))
    .groupBy(skills.slug)
    .orderBy(asc(skills.slug));
  return rows.map((row) => ({ ...row, grantCount: Number(row.grantCount) }));
}
