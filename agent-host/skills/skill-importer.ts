import type { FsSyscalls } from "../workspace/syscalls.ts";
import type { ArchiveProblem } from "./archive-rejection.ts";
import { ArchiveRejection } from "./archive-rejection.ts";
import { extractSkillArchive } from "./extract-skill-archive.ts";
import { DEFAULT_SKILL_LIMITS, type SkillLimits } from "./skill-limits.ts";
import { isSkillSlug } from "./skill-slug.ts";
import type { CatalogueSkill, SourceStore } from "./source-store.ts";

export type ImportOutcome =
  | {
      readonly ok: true;
      readonly status: "installed" | "updated" | "unchanged";
      readonly skill: CatalogueSkill;
    }
  | {
      readonly ok: false;
      readonly reason: "archive_rejected";
      readonly problem: ArchiveProblem;
      readonly message: string;
      /** The offending entry's name as the archive spelled it. */
      readonly entry: string | undefined;
    }
  | {
      readonly ok: false;
      readonly reason: "invalid_slug" | "kind_conflict" | "busy";
      readonly message: string;
    };

export interface ImportRequest {
  readonly slug: string;
  /** The whole archive, zip or tar.gz (told apart by magic bytes). */
  readonly archive: Buffer;
  /** Free-form provenance kept in the catalogue (e.g. the upload id). */
  readonly sourceVersion: string | null;
}

export interface SkillImporterDeps {
  readonly store: SourceStore;
  readonly sys: FsSyscalls;
  readonly limits?: Partial<SkillLimits>;
  /** fsync what is extracted (default true). */
  readonly durable?: boolean;
}

export interface SkillImporter {
  importArchive(request: ImportRequest, signal: AbortSignal): Promise<ImportOutcome>;
}

/**
 * Imports a shared skill from an archive (issue 7 §2). The archive is extracted by the safe
 * extractor into a private temp directory of the source store; a rejected archive changes
 * nothing: the temp directory is removed, the existing source and the catalogue row stay
 * exactly as they were.
 */
export function createSkillImporter(deps: SkillImporterDeps): SkillImporter {
  const limits: SkillLimits = { ...DEFAULT_SKILL_LIMITS, ...deps.limits };
  const durable = deps.durable ?? true;
  return {
    async importArchive(request, signal) {
      if (!isSkillSlug(request.slug)) {
        return {
          ok: false,
          reason: "invalid_slug",
          message:
            "A skill slug is lowercase letters and digits in words joined by single hyphens, e.g. 'pdf-tools'.",
        };
      }
      try {
        return await deps.store.install(
          {
            slug: request.slug,
            kind: "shared",
            sourceVersion: request.sourceVersion,
            fill: async (tempFd, fillSignal) =>
              (
                await extractSkillArchive(deps.sys, request.archive, tempFd, limits, {
                  durable,
                  signal: fillSignal,
                })
              ).root,
          },
          signal,
        );
      } catch (err) {
        if (err instanceof ArchiveRejection) {
          return {
            ok: false,
            reason: "archive_rejected",
            problem: err.problem,
            message: err.message,
            entry: err.entry,
          };
        }
        throw err;
      }
    },
  };
}
