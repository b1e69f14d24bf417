import { Hono } from "hono";
import { z } from "zod";
import { MAX_SERVICE_UPLOAD_KEY_CHARS } from "../../../shared/capability/service-capability-claims.ts";
import { MAX_UID_CHARS } from "../../../shared/contracts/common.ts";
import { MAX_SKILL_SLUG_CHARS } from "../../../shared/contracts/skill.ts";
import type { SkillImportResult } from "../../../shared/contracts/skills-data-plane.ts";
import { WorkcellError } from "../../../shared/errors/index.ts";
import { limitBody } from "../../../shared/http/body-limit.ts";
import type { SkillImportHandler } from "../../skills/import-handler.ts";
import type { PersonalSkill, PersonalSkills } from "../../skills/personal-skills.ts";
import type { RefreshOutcome } from "../../skills/projection-refresher.ts";
import type { SkillsRefreshHandler } from "../../skills/refresh-handler.ts";
import type { DataPlaneDeps } from "../data-plane-deps.ts";
import type { DataPlaneEnv } from "../data-plane-env.ts";
import type { DataPlaneLimits } from "../data-plane-limits.ts";
import {
  authenticateService,
  readServiceBody,
  requireSameUid,
  requireServiceOp,
  type ServiceRoutesEnv,
} from "../service-capability-auth.ts";

export const SKILLS_INTERNAL_PREFIX = "/internal/v1/skills";
/** Every skills route: authenticated by a service capability, never a Workdir one. */
export const SKILLS_INTERNAL_ROUTES = `${SKILLS_INTERNAL_PREFIX}/*`;
export const SKILLS_REFRESH_PATH = `${SKILLS_INTERNAL_PREFIX}/refresh`;
export const SKILLS_IMPORT_PATH = `${SKILLS_INTERNAL_PREFIX}/import`;
export const SKILLS_PERSONAL_PATH = `${SKILLS_INTERNAL_PREFIX}/personal`;
/** Provenance text kept in the catalogue; functions/ sends `upload:<uuid>`. */
export const MAX_SOURCE_VERSION_CHARS = 1024;

/**
 * The agent-host's skill handlers, as `createAgentHostSkills` returns them (an
 * AgentHostSkills is one): the same functions the in-process SkillsDataPlane calls.
 */
export interface SkillsInternalHandlers {
  readonly refreshHandler: SkillsRefreshHandler;
  readonly importHandler: SkillImportHandler;
  readonly personal: PersonalSkills;
}

export interface SkillsInternalRoutesDeps
  extends Pick<DataPlaneDeps, "publicKeys" | "audience" | "issuer"> {
  /** Without them (a node with no database or skills wiring) every route answers 503. */
  readonly skills: SkillsInternalHandlers | undefined;
  readonly limits: DataPlaneLimits;
}

/** Bodies; not strict (fields may grow). The capability decides, the body must agree. */
export const skillsUidBodySchema = z.object({
  uid: z.string().min(1).max(MAX_UID_CHARS).describe("The user; must be the capability's uid."),
});
export const skillsImportBodySchema = z.object({
  slug: z.string().min(1).max(MAX_SKILL_SLUG_CHARS).describe("The capability's skill_slug."),
  key: z.string().min(1).max(MAX_SERVICE_UPLOAD_KEY_CHARS).describe("The capability's upload_key."),
  source_version: z
    .string()
    .max(MAX_SOURCE_VERSION_CHARS)
    .describe("Provenance kept in the catalogue, e.g. `upload:<uuid>`."),
});

/**
 * The skills operations of the control plane's SkillsDataPlane, over HTTP for the split
 * deployment (docs/decisions/0011-skills-over-the-data-plane.md). Each route is an RPC of
 * one agent-host handler: whatever value the handler returns is a 200 body (a refused
 * import, a partly failed refresh), whatever it throws is the docs/api.md error shape, so the
 * functions/ client rebuilds exactly what the in-process implementation returns.
 *
 * `POST /internal/v1/skills/refresh` `{uid}` (op skills.refresh) → 200 RefreshOutcome.
 * `POST /internal/v1/skills/personal` `{uid}` (op skills.personal) → 200 `{items}`.
 * `POST /internal/v1/skills/import` `{slug, key, source_version}` (op skills.import) → 200
 * the import result.
 *
 * Trust: only a service capability opens these routes (a Workdir capability, even a valid
 * one, is 403: it is what browsers hold). The body repeats what the capability names (uid;
 * slug and upload key) and any disagreement is 403 `capability_scope`, so a capability
 * minted to refresh Alice's projection cannot touch Bob's, and one minted for one import
 * cannot import another archive or replace another skill. Nothing here opens a Workdir:
 * the refresh writes only the projection, the listing reads through the workspace layer.
 */
export function registerSkillsInternalRoutes(
  app: Hono<DataPlaneEnv>,
  deps: SkillsInternalRoutesDeps,
): void {
  const routes = new Hono<ServiceRoutesEnv>();
  // Before anything else, including the body limit: an anonymous caller learns nothing.
  routes.use("*", authenticateService(deps));
  const jsonLimit = limitBody<ServiceRoutesEnv>(deps.limits.maxJsonBodyBytes);

  routes.post("/refresh", jsonLimit, async (c) => {
    const claims = requireServiceOp(c, "skills.refresh");
    const skills = available(deps.skills);
    const body = await readServiceBody(c, skillsUidBodySchema, '{"uid": "..."}');
    requireSameUid(body.uid, claims);
    const outcome = await skills.refreshHandler.handle(
      { type: "skills.refresh", uid: body.uid },
      c.req.raw.signal,
    );
    return c.json(refreshJson(outcome), 200);
  });

  routes.post("/personal", jsonLimit, async (c) => {
    const claims = requireServiceOp(c, "skills.personal");
    const skills = available(deps.skills);
    const body = await readServiceBody(c, skillsUidBodySchema, '{"uid": "..."}');
    requireSameUid(body.uid, claims);
    const items = await skills.personal.list(body.uid, c.req.raw.signal);
    return c.json({ items: items.map(personalJson) }, 200);
  });

  routes.post("/import", jsonLimit, async (c) => {
    const claims = requireServiceOp(c, "skills.import");
    const skills = available(deps.skills);
    const body = await readServiceBody(
      c,
      skillsImportBodySchema,
      '{"slug": "...", "key": "...", "source_version": "..."}',
    );
    if (body.slug !== claims.skill_slug || body.key !== claims.upload_key) {
      throw new WorkcellError(
        "forbidden",
        "slug and key must be the ones the capability was minted for: mint one for this import.",
        {
          details: {
            field: body.slug !== claims.skill_slug ? "slug" : "key",
            reason: "capability_scope",
          },
        },
      );
    }
    const result = await skills.importHandler.handle(
      { slug: body.slug, key: body.key, sourceVersion: body.source_version },
      c.req.raw.signal,
    );
    return c.json(importJson(result), 200);
  });

  app.route(SKILLS_INTERNAL_PREFIX, routes);
}

function available(skills: SkillsInternalHandlers | undefined): SkillsInternalHandlers {
  if (skills === undefined) {
    throw new WorkcellError(
      "unavailable",
      "This agent-host's data plane serves no skills: pass `skills` (createAgentHostSkills) to createDataPlaneApp.",
    );
  }
  return skills;
}

function refreshJson(outcome: RefreshOutcome) {
  return {
    ok: outcome.ok,
    projected: outcome.projected,
    copied: outcome.copied,
    unchanged: outcome.unchanged,
    removed: outcome.removed,
    failures: outcome.failures.map((f) => ({ slug: f.slug, reason: f.reason, message: f.message })),
  };
}

function importJson(result: SkillImportResult) {
  if (result.ok) {
    const { slug, kind, description, contentHash } = result.skill;
    return {
      ok: true,
      status: result.status,
      skill: { slug, kind, description, content_hash: contentHash },
    };
  }
  if (result.reason === "archive_rejected") {
    return {
      ok: false,
      reason: result.reason,
      problem: result.problem,
      message: result.message,
      entry: result.entry ?? null,
    };
  }
  return { ok: false, reason: result.reason, message: result.message };
}

function personalJson(skill: PersonalSkill) {
  return { slug: skill.slug, description: skill.description };
}
