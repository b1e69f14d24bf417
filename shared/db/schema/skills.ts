import { sql } from "drizzle-orm";
import {
  bigint,
  check,
  foreignKey,
  index,
  pgSequence,
  pgTable,
  primaryKey,
  text,
} from "drizzle-orm/pg-core";
import { createdAt, enumCheck, timestamptz } from "./columns.ts";

// Personal skills live in the UserWorkspace and are never rows here.
export const SKILL_KINDS = ["builtin", "shared"] as const;
export type SkillKind = (typeof SKILL_KINDS)[number];

export const skills = pgTable(
  "skills",
  {
    slug: text("slug").primaryKey(),
    kind: text("kind", { enum: SKILL_KINDS }).notNull(),
    description: text("description").notNull().default(""),
    // Projection refresh compares this to decide whether a slug must be re-copied.
    contentHash: text("content_hash").notNull(),
    sourceVersion: text("source_version"),
    createdAt: createdAt(),
    updatedAt: timestamptz("updated_at").notNull().defaultNow(),
  },
  (t) => [
    enumCheck("skills_kind_check", t.kind, SKILL_KINDS),
    // The slug becomes a directory name in every projection: one safe path component
    // (no "/", never "." or "..", no leading dot or dash).
    check("skills_slug_check", sql`${t.slug} ~ '^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$'`),
  ],
);

// uid -> skill. Revoking a skill's registration revokes its grants with it.
export const skillGrants = pgTable(
  "skill_grants",
  {
    uid: text("uid").notNull(),
    slug: text("slug").notNull(),
    createdAt: createdAt(),
  },
  (t) => [
    primaryKey({ name: "skill_grants_pkey", columns: [t.uid, t.slug] }),
    foreignKey({
      name: "skill_grants_skill_fk",
      columns: [t.slug],
      foreignColumns: [skills.slug],
    }).onDelete("cascade"),
    // "Which users does updating this skill affect?" (projection refresh fan-out).
    index("skill_grants_slug_idx").on(t.slug),
  ],
);

/**
 * Where every skill grant version comes from: each bump takes the next value, so a value is
 * written by one transaction only and two equal readings mean nothing changed in between.
 */
export const skillGrantVersionSeq = pgSequence("skill_grant_version_seq");

/**
 * uid -> the version of what that uid's projection must hold (docs/decisions/0075). Written
 * only by triggers (migration 0015): a grant inserted, updated or deleted, or a granted
 * skill's content, source or slug changed, bumps it in the writing transaction, so no
 * write path can forget it. The row `''` (no uid is empty) is bumped by a TRUNCATE of
 * `skill_grants`, which names no uid. An absent row reads as 0.
 */
export const skillGrantVersions = pgTable("skill_grant_versions", {
  uid: text("uid").primaryKey(),
  version: bigint("version", { mode: "number" }).notNull(),
});

export type Skill = typeof skills.$inferSelect;
export type NewSkill = typeof skills.$inferInsert;
export type SkillGrant = typeof skillGrants.$inferSelect;
export type NewSkillGrant = typeof skillGrants.$inferInsert;
