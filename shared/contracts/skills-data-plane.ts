import type { RequestOrigin } from "../http/request-origin.ts";

/**
 * The seam from the control plane to the agent-host for skills. functions/ never touches
 * skill bytes: importing an archive, refreshing a projection and reading a user's personal
 * skills all happen on an agent-host, which owns the data root. Expected outcomes are
 * values; an agent-host that cannot be reached throws `unavailable`.
 *
 * Implementations: agent-host/skills/in-process-skills-data-plane.ts (the one-process local
 * Workcell, and tests); an HTTP client for the split deployment calls the same agent-host
 * handlers through the data plane's internal routes.
 *
 * `origin` is the API request a call is made for: the HTTP client sends its id and trace
 * context (docs/decisions/0054); in-process there is no hop to carry them over.
 */
export interface SkillsDataPlane {
  /** Makes the uid's projection equal its grants now (docs/architecture.md §6). */
  refreshProjection(
    uid: string,
    signal: AbortSignal,
    origin?: RequestOrigin,
  ): Promise<ProjectionRefreshResult>;
  /** Imports the uploaded archive at `key` (in the skill-upload bucket) as shared skill `slug`. */
  importSkill(
    request: SkillImportRequest,
    signal: AbortSignal,
    origin?: RequestOrigin,
  ): Promise<SkillImportResult>;
  /** The caller's personal skills (`agents/skills/<slug>/SKILL.md` in their UserWorkspace). */
  listPersonalSkills(
    uid: string,
    signal: AbortSignal,
    origin?: RequestOrigin,
  ): Promise<PersonalSkillInfo[]>;
}

export interface ProjectionRefreshResult {
  /** The projection equals the grants exactly. */
  readonly ok: boolean;
  /** Slugs in the projection afterwards; null when the refresh could not touch it. */
  readonly projected: readonly string[] | null;
  readonly failures: readonly {
    readonly slug: string | null;
    readonly reason: string;
    readonly message: string;
  }[];
}

export interface SkillImportRequest {
  readonly slug: string;
  /** Object key of the uploaded archive. */
  readonly key: string;
  /** Provenance kept in the catalogue, e.g. the upload id. */
  readonly sourceVersion: string;
}

export interface ImportedSkill {
  readonly slug: string;
  readonly kind: "builtin" | "shared";
  readonly description: string;
  readonly contentHash: string;
}

export type SkillImportResult =
  | {
      readonly ok: true;
      readonly status: "installed" | "updated" | "unchanged";
      readonly skill: ImportedSkill;
    }
  | {
      readonly ok: false;
      readonly reason: "archive_rejected";
      readonly problem: string;
      readonly message: string;
      readonly entry: string | undefined;
    }
  | {
      readonly ok: false;
      readonly reason:
        | "invalid_slug"
        | "kind_conflict"
        | "busy"
        | "archive_missing"
        | "archive_too_large";
      readonly message: string;
    };

export interface PersonalSkillInfo {
  readonly slug: string;
  readonly description: string;
}
