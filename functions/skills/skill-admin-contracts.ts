import { z } from "@hono/zod-openapi";
import { timestampSchema, uidSchema, uuidSchema } from "../../shared/contracts/common.ts";
import { MAX_SKILL_SLUG_CHARS } from "../../shared/contracts/skill.ts";

/**
 * Slugs of shared skills (issue 7): lowercase words of letters and digits joined by single
 * hyphens. A strict subset of the shared contract's pattern; the agent-host applies the
 * same rule (agent-host/skills/skill-slug.ts, compared by a unit test).
 */
export const SHARED_SKILL_SLUG_RULE = /^[a-z0-9]+(-[a-z0-9]+)*$/;

/** Largest archive accepted for upload; the agent-host enforces the same bound on import. */
export const MAX_SKILL_ARCHIVE_BYTES = 64 * 1024 * 1024;

export const sharedSkillSlugSchema = z
  .string()
  .min(1)
  .max(MAX_SKILL_SLUG_CHARS)
  .regex(
    SHARED_SKILL_SLUG_RULE,
    "must be lowercase letters and digits in words joined by single hyphens",
  )
  .describe(
    "Skill slug: lowercase words of letters and digits joined by single hyphens, e.g. `pdf-tools`.",
  );

/** `POST /v1/admin/skills/uploads` */
export const skillUploadRequestSchema = z
  .object({
    size: z
      .number()
      .int()
      .min(1)
      .describe(`Archive size in bytes; at most ${MAX_SKILL_ARCHIVE_BYTES} (413 above).`),
  })
  .strict()
  .openapi("SkillUploadRequest")
  .describe("Ask for a presigned upload URL for a skill archive (zip or tar.gz).");

export const skillUploadResponseSchema = z
  .object({
    upload_id: uuidSchema.describe(
      "Pass it to POST /v1/admin/skills once the archive is uploaded.",
    ),
    upload_url: z.url().describe("Presigned URL to PUT the archive to."),
    method: z.literal("PUT").describe("HTTP method for upload_url."),
    headers: z.record(z.string(), z.string()).describe("Headers the PUT must send exactly."),
    expires_at: timestampSchema.describe("upload_url stops working at this time."),
  })
  .openapi("SkillUploadResponse")
  .describe("Where to upload the archive.");

/** `POST /v1/admin/skills` */
export const skillImportRequestSchema = z
  .object({
    slug: sharedSkillSlugSchema,
    upload_id: uuidSchema.describe("The upload holding the archive."),
  })
  .strict()
  .openapi("SkillImportRequest")
  .describe("Register a shared skill, or update it, from an uploaded archive.");

export const adminSkillSchema = z
  .object({
    slug: z.string().describe("Skill slug."),
    kind: z.enum(["builtin", "shared"]).describe("Where the skill comes from."),
    description: z.string().describe("From SKILL.md's front matter; may be empty."),
    content_hash: z.string().describe("sha256 over the skill's paths, types, exec bits and bytes."),
    status: z
      .enum(["installed", "updated", "unchanged"])
      .describe("What the import did: a new skill, new content, or the same content again."),
    refreshes_queued: z
      .number()
      .int()
      .describe("Projections of users holding a grant that were queued for a refresh."),
  })
  .openapi("AdminSkill")
  .describe("A shared skill after an import.");

export const catalogueSkillSchema = z
  .object({
    slug: z.string().describe("Skill slug."),
    kind: z.enum(["builtin", "shared"]).describe("Where the skill comes from."),
    description: z.string().describe("From SKILL.md's front matter; may be empty."),
    content_hash: z
      .string()
      .describe("The content version: sha256 over paths, types, exec bits and bytes."),
    source_version: z
      .string()
      .nullable()
      .describe("Version the source declares (builtin skills), or null."),
    grant_count: z.number().int().min(0).describe("Users holding a grant of this skill."),
    created_at: timestampSchema.describe("When the skill was first registered."),
    updated_at: timestampSchema.describe("When its content last changed."),
  })
  .openapi("CatalogueSkill")
  .describe("A builtin or shared skill of the catalogue.");

export const skillCatalogueSchema = z
  .object({ items: z.array(catalogueSkillSchema).describe("Every skill, by slug.") })
  .openapi("SkillCatalogue")
  .describe("The whole skill catalogue.");

export const grantParamsSchema = z.object({
  slug: sharedSkillSlugSchema.openapi({ param: { name: "slug", in: "path" } }),
  uid: uidSchema.openapi({ param: { name: "uid", in: "path" } }),
});

export const grantResponseSchema = z
  .object({
    slug: z.string().describe("Skill slug."),
    uid: z.string().describe("The user holding the grant."),
    projection: z
      .enum(["refreshed", "queued"])
      .describe(
        "`refreshed`: the skill is in the user's projection now; `queued`: it will be shortly.",
      ),
  })
  .openapi("SkillGrant")
  .describe("A grant of a skill to a user.");

export type SkillUploadRequest = z.infer<typeof skillUploadRequestSchema>;
export type SkillImportRequestBody = z.infer<typeof skillImportRequestSchema>;
