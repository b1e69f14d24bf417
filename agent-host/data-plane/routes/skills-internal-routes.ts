import { type Context, Hono, type MiddlewareHandler } from "hono";
import { z } from "zod";
import { DEFAULT_CAPABILITY_AUDIENCE } from "../../../shared/capability/capability-claims.ts";
import { capabilityTokenType } from "../../../shared/capability/capability-token-type.ts";
import {
  MAX_SERVICE_UPLOAD_KEY_CHARS,
  SERVICE_CAPABILITY_TOKEN_TYPE,
  type ServiceCapabilityClaims,
} from "../../../shared/capability/service-capability-claims.ts";
import {
  grantsServiceOp,
  type ServiceCapabilityOp,
} from "../../../shared/capability/service-capability-ops.ts";
import {
  type VerifyCapabilityOptions,
  verifyCapability,
} from "../../../shared/capability/verify-capability.ts";
import {
  type ServiceCapabilityVerification,
  verifyServiceCapability,
} from "../../../shared/capability/verify-service-capability.ts";
import { MAX_UID_CHARS } from "../../../shared/contracts/common.ts";
import { invalidRequestFromZod } from "../../../shared/contracts/contract-result.ts";
import { MAX_SKILL_SLUG_CHARS } from "../../../shared/contracts/skill.ts";
import type { SkillImportResult } from "../../../shared/contracts/skills-data-plane.ts";
import { WorkcellError } from "../../../shared/errors/index.ts";
import { bearerToken } from "../../../shared/http/bearer-token.ts";
import { limitBody } from "../../../shared/http/body-limit.ts";
import type { SkillImportHandler } from "../../skills/import-handler.ts";
import type { PersonalSkill, PersonalSkills } from "../../skills/personal-skills.ts";
import type { RefreshOutcome } from "../../skills/projection-refresher.ts";
import type { SkillsRefreshHandler } from "../../skills/refresh-handler.ts";
import type { DataPlaneDeps } from "../data-plane-deps.ts";
import type { DataPlaneEnv } from "../data-plane-env.ts";
import type { DataPlaneLimits } from "../data-plane-limits.ts";

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

type SkillsRoutesEnv = {
  Variables: Omit<DataPlaneEnv["Variables"], "capability"> & {
    /** The verified service capability; set by the skills routes' own authentication. */
    serviceCapability: ServiceCapabilityClaims;
  };
};

/**
 * The skills operations of the control plane's SkillsDataPlane, over HTTP for the split
 * deployment (docs/decisions/0011-skills-over-the-data-plane.md). Each route is an RPC of
 * one agent-host handler: whatever value the handler returns is a 200 body (a refused
 * import, a partly failed refresh), whatever it throws is the API.md error shape, so the
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
  const routes = new Hono<SkillsRoutesEnv>();
  // Before anything else, including the body limit: an anonymous caller learns nothing.
  routes.use("*", authenticateService(deps));
  const jsonLimit = limitBody<SkillsRoutesEnv>(deps.limits.maxJsonBodyBytes);

  routes.post("/refresh", jsonLimit, async (c) => {
    const claims = requireServiceOp(c, "skills.refresh");
    const skills = available(deps.skills);
    const body = await readBody(c, skillsUidBodySchema, '{"uid": "..."}');
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
    const body = await readBody(c, skillsUidBodySchema, '{"uid": "..."}');
    requireSameUid(body.uid, claims);
    const items = await skills.personal.list(body.uid, c.req.raw.signal);
    return c.json({ items: items.map(personalJson) }, 200);
  });

  routes.post("/import", jsonLimit, async (c) => {
    const claims = requireServiceOp(c, "skills.import");
    const skills = available(deps.skills);
    const body = await readBody(
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

/**
 * For the Workdir routes (`/dp/v1/*`, the other `/internal/v1/*`), in front of their own
 * authentication: a genuine service capability is refused with 403, because it names no
 * Workdir and must never open one. (Without this guard the Workdir verifier would refuse it
 * too, by its `typ`, but as 401, telling an honest caller to fetch the same token again.)
 * Every other token goes on, untouched, to the Workdir authentication. The `typ` peek only
 * picks the verifier; the verifier pins the `typ` under the signature.
 */
export function refuseServiceCapability(
  deps: Pick<DataPlaneDeps, "publicKeys" | "audience" | "issuer">,
  clockToleranceSec: number,
): MiddlewareHandler<DataPlaneEnv> {
  return async function refuseServiceCapabilityMiddleware(c, next) {
    const token = bearerToken(c.req.header("Authorization"));
    if (token !== undefined && capabilityTokenType(token) === SERVICE_CAPABILITY_TOKEN_TYPE) {
      const result = await verifyServiceCapability(
        token,
        verifyOptions(deps, clockToleranceSec, c.req.raw.signal),
      );
      if (result.ok) {
        c.var.logger.info({ jti: result.claims.jti }, "service capability on a Workdir route");
        throw new WorkcellError(
          "forbidden",
          "A service capability cannot open a Workdir: use a capability from POST /v1/threads/{id}/files/access.",
          { details: { reason: "operation_not_granted" } },
        );
      }
    }
    await next();
  };
}

function authenticateService(deps: SkillsInternalRoutesDeps): MiddlewareHandler<SkillsRoutesEnv> {
  return async function authenticateServiceMiddleware(c, next) {
    const header = c.req.header("Authorization");
    const token = bearerToken(header);
    const options = verifyOptions(deps, deps.limits.clockToleranceSec, c.req.raw.signal);
    const result: ServiceCapabilityVerification =
      header === undefined
        ? { ok: false, reason: "missing" }
        : token === undefined
          ? { ok: false, reason: "malformed" }
          : await verifyServiceCapability(token, options);
    // `wrong_type` is only given for a correctly signed token: if it is a valid Workdir
    // capability, the caller is authenticated but not allowed (403), as for a missing op.
    if (
      !result.ok &&
      result.reason === "wrong_type" &&
      token !== undefined &&
      (await verifyCapability(token, options)).ok
    ) {
      c.var.logger.info({ reason: "workdir_capability" }, "capability refused");
      throw new WorkcellError(
        "forbidden",
        "A Workdir capability cannot call the skills routes: functions/ mints a service capability for them.",
        { details: { reason: "operation_not_granted" } },
      );
    }
    if (!result.ok) {
      // The precise reason goes to the log only; `expired` alone is told (see capability-auth).
      c.var.logger.info({ reason: result.reason }, "capability refused");
      throw new WorkcellError(
        "unauthenticated",
        result.reason === "expired"
          ? "The service capability has expired: mint a new one for each call (and check the clocks of functions/ and this agent-host)."
          : "Missing or invalid service capability: send 'Authorization: Bearer <capability>' as minted by functions/ (mintServiceCapability).",
        result.reason === "expired" ? { details: { reason: "capability_expired" } } : {},
      );
    }
    c.set("serviceCapability", result.claims);
    c.set(
      "logger",
      c.var.logger.child({
        jti: result.claims.jti,
        ...(result.claims.uid === undefined ? {} : { uid: result.claims.uid }),
      }),
    );
    await next();
  };
}

function verifyOptions(
  deps: Pick<DataPlaneDeps, "publicKeys" | "audience" | "issuer">,
  clockToleranceSec: number,
  signal: AbortSignal,
): VerifyCapabilityOptions {
  return {
    publicKey: deps.publicKeys,
    audience: deps.audience ?? DEFAULT_CAPABILITY_AUDIENCE,
    ...(deps.issuer === undefined ? {} : { issuer: deps.issuer }),
    clockToleranceSec,
    signal,
  };
}

function requireServiceOp(
  c: Context<SkillsRoutesEnv>,
  op: ServiceCapabilityOp,
): ServiceCapabilityClaims {
  const claims = c.var.serviceCapability;
  if (!grantsServiceOp(claims.ops, op)) {
    throw new WorkcellError(
      "forbidden",
      `The capability does not allow '${op}': mint one that includes it.`,
      { details: { reason: "operation_not_granted", op } },
    );
  }
  return claims;
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

/** Exact comparison: a uid is an opaque string, and the capability's is the one decided. */
function requireSameUid(asked: string, claims: ServiceCapabilityClaims): void {
  if (asked !== claims.uid) {
    throw new WorkcellError(
      "forbidden",
      "uid is not the user the capability was minted for: mint one for this user.",
      { details: { field: "uid", reason: "capability_scope" } },
    );
  }
}

async function readBody<S extends z.ZodType>(
  c: Context<SkillsRoutesEnv>,
  schema: S,
  shape: string,
): Promise<z.output<S>> {
  let raw: unknown;
  try {
    raw = await c.req.json();
  } catch (err) {
    if (err instanceof WorkcellError) throw err; // the body limit
    throw new WorkcellError("invalid_request", `Send a JSON body: ${shape}.`, {
      details: { reason: "malformed_json" },
    });
  }
  const parsed = schema.safeParse(raw);
  if (!parsed.success) throw invalidRequestFromZod(parsed.error);
  return parsed.data;
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
