import type { Logger } from "pino";
import { assertNever } from "../../shared/assert-never.ts";
import type { Skill } from "../../shared/contracts/skill.ts";
import type {
  ImportedSkill,
  ProjectionRefreshResult,
  SkillsDataPlane,
} from "../../shared/contracts/skills-data-plane.ts";
import { WorkcellError } from "../../shared/errors/index.ts";
import type { RequestOrigin } from "../../shared/http/request-origin.ts";
import { MAX_SKILL_ARCHIVE_BYTES } from "./skill-admin-contracts.ts";
import type { SkillArchiveUploads } from "./skill-archive-uploads.ts";
import type { SkillCatalogue } from "./skill-catalogue.ts";
import type { SkillRefreshQueue } from "./skill-refresh-queue.ts";

/** Bounds of the skills endpoints, with units. */
export interface SkillsLimits {
  /** Largest archive an admin may upload (413 above). */
  readonly maxArchiveBytes: number;
  /**
   * How long a grant change waits for the projection refresh before answering. A revoke
   * that cannot confirm the removal within it answers 503 (retry the idempotent DELETE);
   * a grant answers `projection: "queued"`.
   */
  readonly refreshWaitMs: number;
  /** How long an import may take on the agent-host. */
  readonly importWaitMs: number;
}

export const DEFAULT_SKILLS_LIMITS: SkillsLimits = Object.freeze({
  maxArchiveBytes: MAX_SKILL_ARCHIVE_BYTES,
  refreshWaitMs: 30_000,
  importWaitMs: 120_000,
});

export interface SkillsServiceDeps {
  readonly catalogue: SkillCatalogue;
  readonly dataPlane: SkillsDataPlane;
  readonly uploads: SkillArchiveUploads;
  readonly refreshQueue: SkillRefreshQueue;
  readonly logger: Logger;
  readonly limits?: Partial<SkillsLimits>;
}

export type ImportedSkillResult = ImportedSkill & {
  readonly status: "installed" | "updated" | "unchanged";
  readonly refreshesQueued: number;
};

/**
 * The skills use cases of the control plane (docs/api.md "Skills"). Authorization (admin or
 * not) is the routes'; this decides what happens and in which order.
 *
 * Revoke trigger (docs/decisions/0007-skills.md): the grant is deleted and committed
 * first, then the projection is refreshed synchronously through the data plane with a
 * bounded wait. The revoke succeeds only once the refresh reports the slug absent from
 * the projection, which every live sandbox of the user has bind-mounted; otherwise 503
 * and a queued refresh as a backstop. The run worker refreshes before every sandbox
 * acquire as well, so a lost refresh can never leave the skill in a new sandbox.
 */
export interface SkillsService {
  listVisible(uid: string, signal: AbortSignal, origin?: RequestOrigin): Promise<Skill[]>;
  createUpload(size: number, signal: AbortSignal): ReturnType<SkillArchiveUploads["presign"]>;
  importUpload(
    slug: string,
    uploadId: string,
    signal: AbortSignal,
    origin?: RequestOrigin,
  ): Promise<ImportedSkillResult>;
  grant(
    uid: string,
    slug: string,
    signal: AbortSignal,
    origin?: RequestOrigin,
  ): Promise<"refreshed" | "queued">;
  revoke(uid: string, slug: string, signal: AbortSignal, origin?: RequestOrigin): Promise<void>;
}

export function createSkillsService(deps: SkillsServiceDeps): SkillsService {
  const limits: SkillsLimits = { ...DEFAULT_SKILLS_LIMITS, ...deps.limits };
  const log = deps.logger.child({ component: "skills" });

  async function refreshNow(
    uid: string,
    signal: AbortSignal,
    origin: RequestOrigin | undefined,
  ): Promise<ProjectionRefreshResult | undefined> {
    try {
      return await deps.dataPlane.refreshProjection(
        uid,
        AbortSignal.any([signal, AbortSignal.timeout(limits.refreshWaitMs)]),
        origin,
      );
    } catch (err) {
      signal.throwIfAborted();
      log.warn({ err, uid }, "synchronous projection refresh failed");
      return undefined;
    }
  }

  async function enqueue(
    uids: readonly string[],
    signal: AbortSignal,
    origin: RequestOrigin | undefined,
  ): Promise<number> {
    if (uids.length === 0) return 0;
    const { sent, failed } = await deps.refreshQueue.enqueueRefresh(uids, signal, origin);
    if (failed.length > 0) {
      // The run worker refreshes before every sandbox acquire: a lost fan-out delays an
      // update until the user's next run, it never shows a revoked skill.
      log.warn({ failed: failed.length }, "skills refresh not queued for some users");
    }
    return sent.length;
  }

  return {
    async listVisible(uid, signal, origin) {
      const [granted, personal] = await Promise.all([
        deps.catalogue.listGranted(uid),
        deps.dataPlane.listPersonalSkills(uid, signal, origin),
      ]);
      return [
        ...granted.map((s) => ({ slug: s.slug, kind: s.kind, description: s.description })),
        ...[...personal]
          .sort((a, b) => (a.slug < b.slug ? -1 : a.slug > b.slug ? 1 : 0))
          .map((s) => ({ slug: s.slug, kind: "personal" as const, description: s.description })),
      ];
    },

    async createUpload(size, signal) {
      if (size > limits.maxArchiveBytes) {
        throw new WorkcellError(
          "payload_too_large",
          `A skill archive may be at most ${limits.maxArchiveBytes} bytes: make the skill smaller.`,
          { details: { max_bytes: limits.maxArchiveBytes } },
        );
      }
      return deps.uploads.presign(signal);
    },

    async importUpload(slug, uploadId, signal, origin) {
      const size = await deps.uploads.sizeOf(uploadId, signal);
      if (size === undefined) {
        throw new WorkcellError(
          "invalid_request",
          "Nothing was uploaded for this upload_id: PUT the archive to upload_url first.",
          {
            details: { reason: "archive_not_uploaded", field: "upload_id" },
          },
        );
      }
      if (size > limits.maxArchiveBytes) {
        await deps.uploads.remove(uploadId, signal).catch(() => {});
        throw new WorkcellError(
          "payload_too_large",
          `A skill archive may be at most ${limits.maxArchiveBytes} bytes.`,
          {
            details: { max_bytes: limits.maxArchiveBytes },
          },
        );
      }
      const result = await deps.dataPlane.importSkill(
        { slug, key: deps.uploads.keyOf(uploadId), sourceVersion: `upload:${uploadId}` },
        AbortSignal.any([signal, AbortSignal.timeout(limits.importWaitMs)]),
        origin,
      );
      if (!(!result.ok && result.reason === "busy")) {
        // Imported or refused for good: the upload has served its purpose either way.
        await deps.uploads
          .remove(uploadId, signal)
          .catch((err) => log.warn({ err }, "skill upload not removed"));
      }
      if (!result.ok) throw importError(result);
      const refreshesQueued =
        result.status === "unchanged"
          ? 0
          : await enqueue(await deps.catalogue.grantees(slug), signal, origin);
      log.info(
        { slug, status: result.status, refreshes_queued: refreshesQueued },
        "skill imported",
      );
      return { ...result.skill, status: result.status, refreshesQueued };
    },

    async grant(uid, slug, signal, origin) {
      const change = await deps.catalogue.grant(uid, slug);
      if (!change.found) throw noSuchSkill(slug);
      const outcome = await refreshNow(uid, signal, origin);
      if (outcome?.projected?.includes(slug)) return "refreshed";
      await enqueue([uid], signal, origin);
      return "queued";
    },

    async revoke(uid, slug, signal, origin) {
      const change = await deps.catalogue.revoke(uid, slug);
      if (!change.found) throw noSuchSkill(slug);
      const outcome = await refreshNow(uid, signal, origin);
      // Whatever else the refresh reports (another slug's broken source, say), the revoke
      // is done once the slug is gone from the projection every sandbox mounts.
      if (outcome !== undefined && outcome.projected !== null && !outcome.projected.includes(slug))
        return;
      await enqueue([uid], signal, origin).catch(() => 0);
      throw new WorkcellError(
        "unavailable",
        "The grant is revoked, but the skill could not yet be removed from the user's sandboxes: retry the request.",
        { details: { reason: "projection_refresh_failed" } },
      );
    },
  };
}

function noSuchSkill(slug: string): WorkcellError {
  return new WorkcellError(
    "not_found",
    `No skill '${slug}': register it first with POST /v1/admin/skills.`,
    {
      details: { slug },
    },
  );
}

function importError(
  result: Exclude<Awaited<ReturnType<SkillsDataPlane["importSkill"]>>, { ok: true }>,
): WorkcellError {
  switch (result.reason) {
    case "archive_rejected":
      return new WorkcellError("unprocessable", result.message, {
        details: {
          reason: "archive_rejected",
          problem: result.problem,
          ...(result.entry ? { entry: result.entry } : {}),
        },
      });
    case "invalid_slug":
      return new WorkcellError("invalid_request", result.message, { details: { field: "slug" } });
    case "kind_conflict":
      return new WorkcellError("conflict", result.message, {
        details: { reason: "skill_kind_conflict" },
      });
    case "busy":
      return new WorkcellError("unavailable", result.message, {
        details: { reason: "skill_busy" },
      });
    case "archive_missing":
      return new WorkcellError("invalid_request", result.message, {
        details: { reason: "archive_not_uploaded" },
      });
    case "archive_too_large":
      return new WorkcellError("payload_too_large", result.message);
    default:
      return assertNever(result, "import refusal");
  }
}
