import { z } from "zod";
import type {
  PersonalSkillInfo,
  ProjectionRefreshResult,
  SkillImportResult,
  SkillsDataPlane,
} from "../../shared/contracts/skills-data-plane.ts";
import { WorkcellError } from "../../shared/errors/workcell-error.ts";
import type { RequestOrigin } from "../../shared/http/request-origin.ts";
import type {
  ServiceCapabilityMinter,
  ServiceCapabilityRequest,
} from "../capability/capability-minter.ts";
import {
  createDataPlaneHttp,
  deadlineOf,
  parseJson,
  serviceRefusalOf,
} from "../data-plane/data-plane-http.ts";

/**
 * The data plane's skills routes (agent-host/data-plane/routes/skills-internal-routes.ts).
 * Spelled out rather than imported: functions/ must not bundle agent-host code (it runs on
 * Workers), and tests/integration/skills-http calls the real data plane, so drift fails it.
 */
export const SKILLS_REFRESH_PATH = "/internal/v1/skills/refresh";
export const SKILLS_IMPORT_PATH = "/internal/v1/skills/import";
export const SKILLS_PERSONAL_PATH = "/internal/v1/skills/personal";

/**
 * Longest wait per call when the caller's own signal allows more. The skills service bounds
 * refreshes (refreshWaitMs, 30 s) and imports (importWaitMs, 120 s) itself; the listing is on
 * `GET /v1/skills`, where an agent-host slower than this counts as down.
 */
export const DEFAULT_SKILLS_REFRESH_TIMEOUT_MS = 30_000;
export const DEFAULT_SKILLS_IMPORT_TIMEOUT_MS = 120_000;
export const DEFAULT_SKILLS_PERSONAL_TIMEOUT_MS = 10_000;
/** Each capability is minted for one call and presented at once: seconds are enough. */
export const SKILLS_CAPABILITY_TTL_SECONDS = 30;
/**
 * Largest answer read from the data plane. The biggest is a personal listing (200 skills of
 * up to 1,024-character descriptions, well under 1 MiB); anything far larger is not ours.
 */
export const MAX_SKILLS_RESPONSE_BYTES = 4 * 1024 * 1024;

export type HttpSkillsDataPlaneOptions = {
  /** DATA_PLANE_URL: the base URL of any agent-host's data plane (they share the data root). */
  baseUrl: string;
  /** Mints the service capabilities (createCapabilityMinter returns one). */
  capabilities: ServiceCapabilityMinter;
  fetch?: typeof fetch;
  /** Overrides every per-call default (DEFAULT_SKILLS_*_TIMEOUT_MS). */
  timeoutMs?: number;
  maxResponseBytes?: number;
};

const refreshResponseSchema = z.object({
  ok: z.boolean(),
  projected: z.array(z.string()).nullable(),
  failures: z.array(
    z.object({ slug: z.string().nullable(), reason: z.string(), message: z.string() }),
  ),
});

const importResponseSchema = z.discriminatedUnion("ok", [
  z.object({
    ok: z.literal(true),
    status: z.enum(["installed", "updated", "unchanged"]),
    skill: z.object({
      slug: z.string(),
      kind: z.enum(["builtin", "shared"]),
      description: z.string(),
      content_hash: z.string(),
    }),
  }),
  z.object({
    ok: z.literal(false),
    reason: z.enum([
      "archive_rejected",
      "invalid_slug",
      "kind_conflict",
      "busy",
      "archive_missing",
      "archive_too_large",
    ]),
    message: z.string(),
    problem: z.string().optional(),
    entry: z.string().nullable().optional(),
  }),
]);

const personalResponseSchema = z.object({
  items: z.array(z.object({ slug: z.string(), description: z.string() })),
});

/**
 * The control plane's SkillsDataPlane over the data plane's HTTP API, for the split
 * deployment (docs/decisions/0011-skills-over-the-data-plane.md). Each call mints its own
 * service capability for exactly that call (the uid for a refresh or a listing; the slug and
 * the upload key for an import), used at once by us and never handed to a client.
 *
 * Outcomes are the ones the in-process implementation returns: the data plane answers every
 * handler value with 200, and its errors are rethrown with their code, message and details.
 * A data plane that cannot be reached, or answers with something that is not ours (a proxy's
 * 502), is `unavailable`; a refused capability is `internal` (the key pair or the scope is
 * wrong: an operator's or our bug, not the caller's). Each call carries its API request's
 * `X-Request-Id` and trace context when given one (docs/decisions/0054).
 */
export function createHttpSkillsDataPlane(options: HttpSkillsDataPlaneOptions): SkillsDataPlane {
  const http = createDataPlaneHttp({
    ...options,
    maxResponseBytes: options.maxResponseBytes ?? MAX_SKILLS_RESPONSE_BYTES,
  });

  async function call<S extends z.ZodType>(
    path: string,
    capability: ServiceCapabilityRequest,
    body: unknown,
    schema: S,
    defaultTimeoutMs: number,
    signal: AbortSignal,
    origin: RequestOrigin | undefined,
  ): Promise<z.output<S>> {
    const timed = deadlineOf(signal, options.timeoutMs ?? defaultTimeoutMs);
    const { token } = await options.capabilities.mintService(
      { ...capability, ttlSeconds: SKILLS_CAPABILITY_TTL_SECONDS },
      timed,
    );
    const { status, text } = await http.request({
      path,
      method: "POST",
      token,
      body,
      signal: timed,
      callerSignal: signal,
      purpose: `for skills (${path})`,
      ...(origin === undefined ? {} : { origin }),
    });
    if (status !== 200) throw serviceRefusalOf(path, status, text);
    const parsed = schema.safeParse(parseJson(text));
    if (!parsed.success) {
      throw new WorkcellError(
        "internal",
        `The agent-host answered ${path} with an unexpected body: its version does not match functions/.`,
      );
    }
    return parsed.data;
  }

  return {
    async refreshProjection(uid, signal, origin): Promise<ProjectionRefreshResult> {
      const out = await call(
        SKILLS_REFRESH_PATH,
        { ops: ["skills.refresh"], uid },
        { uid },
        refreshResponseSchema,
        DEFAULT_SKILLS_REFRESH_TIMEOUT_MS,
        signal,
        origin,
      );
      return { ok: out.ok, projected: out.projected, failures: out.failures };
    },

    async importSkill(request, signal, origin): Promise<SkillImportResult> {
      const out = await call(
        SKILLS_IMPORT_PATH,
        { ops: ["skills.import"], skill: { slug: request.slug, uploadKey: request.key } },
        { slug: request.slug, key: request.key, source_version: request.sourceVersion },
        importResponseSchema,
        DEFAULT_SKILLS_IMPORT_TIMEOUT_MS,
        signal,
        origin,
      );
      if (out.ok) {
        const { slug, kind, description, content_hash } = out.skill;
        return {
          ok: true,
          status: out.status,
          skill: { slug, kind, description, contentHash: content_hash },
        };
      }
      if (out.reason === "archive_rejected") {
        return {
          ok: false,
          reason: out.reason,
          problem: out.problem ?? "",
          message: out.message,
          entry: out.entry ?? undefined,
        };
      }
      return { ok: false, reason: out.reason, message: out.message };
    },

    async listPersonalSkills(uid, signal, origin): Promise<PersonalSkillInfo[]> {
      const out = await call(
        SKILLS_PERSONAL_PATH,
        { ops: ["skills.personal"], uid },
        { uid },
        personalResponseSchema,
        DEFAULT_SKILLS_PERSONAL_TIMEOUT_MS,
        signal,
        origin,
      );
      return out.items;
    },
  };
}
