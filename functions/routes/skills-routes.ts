import { createRoute, type OpenAPIHono } from "@hono/zod-openapi";
import type { Logger } from "pino";
import { skillListSchema } from "../../shared/contracts/skill.ts";
import type { SkillsDataPlane } from "../../shared/contracts/skills-data-plane.ts";
import type { Db } from "../../shared/db/client.ts";
import type { Tracing } from "../../shared/telemetry/tracing.ts";
import type { AppEnv } from "../app-env.ts";
import { requestOriginOf } from "../data-plane/request-origin.ts";
import { isoTime } from "../db/iso-time.ts";
import { listSkillCatalogue } from "../skills/list-skill-catalogue.ts";
import {
  adminSkillSchema,
  grantParamsSchema,
  grantResponseSchema,
  skillCatalogueSchema,
  skillImportRequestSchema,
  skillUploadRequestSchema,
  skillUploadResponseSchema,
} from "../skills/skill-admin-contracts.ts";
import type { SkillArchiveUploads } from "../skills/skill-archive-uploads.ts";
import { createSkillCatalogue } from "../skills/skill-catalogue.ts";
import type { SkillRefreshQueue } from "../skills/skill-refresh-queue.ts";
import { createSkillsService, type SkillsLimits } from "../skills/skills-service.ts";
import { bearerSecurity, commonErrors, errorResponse } from "./openapi-common.ts";

export type SkillRoutesDeps = {
  db: Db;
  logger: Logger;
  /** The agent-host side: imports, projection refreshes, personal skills. */
  skillsDataPlane: SkillsDataPlane;
  /** Presigned uploads of skill archives (S3, the attachments bucket). */
  skillUploads: SkillArchiveUploads;
  /** `skills.refresh` messages on the run queue. */
  skillRefreshQueue: SkillRefreshQueue;
  skillsLimits?: Partial<SkillsLimits>;
  /** The data-plane calls continue the request's trace (docs/decisions/0054); default off. */
  tracing?: Tracing;
};

const listSkills = createRoute({
  method: "get",
  path: "/v1/skills",
  summary: "The caller's visible skills: granted builtin and shared skills, and personal ones",
  security: bearerSecurity,
  responses: {
    200: { description: "Skills", content: { "application/json": { schema: skillListSchema } } },
    ...commonErrors,
  },
});

const listCatalogue = createRoute({
  method: "get",
  path: "/v1/admin/skills",
  summary: "Admin: the whole catalogue (builtin and shared skills, versions, grant counts)",
  security: bearerSecurity,
  responses: {
    200: {
      description: "The catalogue",
      content: { "application/json": { schema: skillCatalogueSchema } },
    },
    403: errorResponse("The caller is not an admin."),
    ...commonErrors,
  },
});

const createUpload = createRoute({
  method: "post",
  path: "/v1/admin/skills/uploads",
  summary: "Admin: a presigned URL to upload a skill archive (zip or tar.gz)",
  security: bearerSecurity,
  request: {
    body: { content: { "application/json": { schema: skillUploadRequestSchema } }, required: true },
  },
  responses: {
    201: {
      description: "Where to PUT the archive",
      content: { "application/json": { schema: skillUploadResponseSchema } },
    },
    400: errorResponse("Bad body."),
    403: errorResponse("The caller is not an admin."),
    413: errorResponse("The archive is larger than allowed."),
    ...commonErrors,
  },
});

const importSkill = createRoute({
  method: "post",
  path: "/v1/admin/skills",
  summary: "Admin: register or update a shared skill from an uploaded archive",
  description:
    "The archive is imported by the agent-host's safe extractor: only regular files and directories, no absolute or `..` names, no duplicates, bounded sizes and compression ratio, and a SKILL.md at its top (or in its one top directory). A refused archive changes nothing.",
  security: bearerSecurity,
  request: {
    body: { content: { "application/json": { schema: skillImportRequestSchema } }, required: true },
  },
  responses: {
    200: {
      description: "An existing skill, updated (or unchanged)",
      content: { "application/json": { schema: adminSkillSchema } },
    },
    201: {
      description: "A new skill",
      content: { "application/json": { schema: adminSkillSchema } },
    },
    400: errorResponse("Bad body, or nothing was uploaded for upload_id."),
    403: errorResponse("The caller is not an admin."),
    409: errorResponse("The slug belongs to a builtin skill."),
    413: errorResponse("The archive is larger than allowed."),
    422: errorResponse(
      "The archive was refused (details.problem says why; details.entry names the entry).",
    ),
    ...commonErrors,
  },
});

const grantSkill = createRoute({
  method: "put",
  path: "/v1/admin/skills/{slug}/grants/{uid}",
  summary: "Admin: grant a skill to a user (idempotent); the user's projection is refreshed",
  security: bearerSecurity,
  request: { params: grantParamsSchema },
  responses: {
    200: {
      description: "The grant",
      content: { "application/json": { schema: grantResponseSchema } },
    },
    403: errorResponse("The caller is not an admin."),
    404: errorResponse("No such skill."),
    ...commonErrors,
  },
});

const revokeSkill = createRoute({
  method: "delete",
  path: "/v1/admin/skills/{slug}/grants/{uid}",
  summary:
    "Admin: revoke a grant (idempotent); answers once the skill is gone from the user's sandboxes",
  security: bearerSecurity,
  request: { params: grantParamsSchema },
  responses: {
    204: { description: "Revoked, and removed from the user's projection" },
    403: errorResponse("The caller is not an admin."),
    404: errorResponse("No such skill."),
    ...commonErrors,
    503: errorResponse("Revoked, but the projection could not be refreshed yet: retry the DELETE."),
  },
});

/**
 * `/v1/skills` and `/v1/admin/skills/...` (docs/api.md "Skills"). Expects the authenticate
 * middleware in front (c.var.principal) and, for the admin routes, requireAdmin (app.ts).
 */
export function registerSkillRoutes(app: OpenAPIHono<AppEnv>, deps: SkillRoutesDeps): void {
  const service = createSkillsService({
    catalogue: createSkillCatalogue(deps.db),
    dataPlane: deps.skillsDataPlane,
    uploads: deps.skillUploads,
    refreshQueue: deps.skillRefreshQueue,
    logger: deps.logger,
    ...(deps.skillsLimits ? { limits: deps.skillsLimits } : {}),
  });

  app.openapi(listSkills, async (c) => {
    const items = await service.listVisible(
      c.var.principal.uid,
      c.req.raw.signal,
      requestOriginOf(c, deps.tracing),
    );
    return c.json({ items }, 200);
  });

  app.openapi(listCatalogue, async (c) => {
    const items = (await listSkillCatalogue(deps.db)).map((skill) => ({
      slug: skill.slug,
      kind: skill.kind,
      description: skill.description,
      content_hash: skill.contentHash,
      source_version: skill.sourceVersion,
      grant_count: skill.grantCount,
      created_at: isoTime(skill.createdAt),
      updated_at: isoTime(skill.updatedAt),
    }));
    return c.json({ items }, 200);
  });

  app.openapi(createUpload, async (c) => {
    const upload = await service.createUpload(c.req.valid("json").size, c.req.raw.signal);
    return c.json(
      {
        upload_id: upload.uploadId,
        upload_url: upload.url,
        method: "PUT" as const,
        headers: { ...upload.headers },
        expires_at: upload.expiresAt.toISOString(),
      },
      201,
    );
  });

  app.openapi(importSkill, async (c) => {
    const body = c.req.valid("json");
    const imported = await service.importUpload(
      body.slug,
      body.upload_id,
      c.req.raw.signal,
      requestOriginOf(c, deps.tracing),
    );
    const response = {
      slug: imported.slug,
      kind: imported.kind,
      description: imported.description,
      content_hash: imported.contentHash,
      status: imported.status,
      refreshes_queued: imported.refreshesQueued,
    };
    return imported.status === "installed" ? c.json(response, 201) : c.json(response, 200);
  });

  app.openapi(grantSkill, async (c) => {
    const { slug, uid } = c.req.valid("param");
    const projection = await service.grant(
      uid,
      slug,
      c.req.raw.signal,
      requestOriginOf(c, deps.tracing),
    );
    return c.json({ slug, uid, projection }, 200);
  });

  app.openapi(revokeSkill, async (c) => {
    const { slug, uid } = c.req.valid("param");
    await service.revoke(uid, slug, c.req.raw.signal, requestOriginOf(c, deps.tracing));
    return c.body(null, 204);
  });
}
