import { fileURLToPath } from "node:url";
import type { Logger } from "pino";
import { domainReasonOf } from "../../shared/errors/index.ts";
import {
  AT_FDCWD,
  type FsSyscalls,
  O_CLOEXEC,
  O_DIRECTORY,
  O_RDONLY,
} from "../workspace/syscalls.ts";
import { ArchiveRejection } from "./archive-rejection.ts";
import { safeCopyTree } from "./safe-copy.ts";
import { openDirAt, skillFsError } from "./skill-fs.ts";
import { DEFAULT_SKILL_LIMITS, type SkillLimits } from "./skill-limits.ts";
import { isSkillSlug } from "./skill-slug.ts";
import type { SourceStore } from "./source-store.ts";

/** Where the agent-host's own skills ship: `infra/skills/builtin/<slug>/SKILL.md`. */
export const DEFAULT_BUILTIN_SKILLS_DIR = fileURLToPath(
  new URL("../../infra/skills/builtin/", import.meta.url),
);
/** Catalogue `source_version` of builtin skills; the content hash tells versions apart. */
export const BUILTIN_SOURCE_VERSION = "builtin";
/** More builtin directories than this is a packaging mistake. */
export const MAX_BUILTIN_SKILLS = 1_000;

export interface BuiltinRegistration {
  readonly slug: string;
  readonly status: "installed" | "updated" | "unchanged" | "conflict" | "busy" | "invalid";
  readonly message?: string;
}

export interface BuiltinSkillsDeps {
  readonly store: SourceStore;
  readonly sys: FsSyscalls;
  readonly logger: Logger;
  readonly builtinDir?: string;
  readonly limits?: Partial<SkillLimits>;
}

/**
 * Registers the skills shipped with this agent-host (called once at start): each one is
 * safely copied into the source store and its catalogue row upserted, unless the same
 * content is already there (so restarting N nodes does not churn N copies). Builtins of
 * older releases are left in place: during a rolling deploy older nodes still ship them.
 *
 * A slug taken by a shared skill is reported as a conflict and left alone: an admin's
 * upload is never overwritten by a deploy.
 */
export async function registerBuiltinSkills(
  deps: BuiltinSkillsDeps,
  signal: AbortSignal,
): Promise<BuiltinRegistration[]> {
  const limits: SkillLimits = { ...DEFAULT_SKILL_LIMITS, ...deps.limits };
  const dir = deps.builtinDir ?? DEFAULT_BUILTIN_SKILLS_DIR;
  const { sys } = deps;
  // The shipped directory is part of the installation (trusted path); its entries are
  // still opened no-follow and copied by the safe copy like any source.
  const opened = sys.openat(AT_FDCWD, dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (!opened.ok) throw skillFsError("open", dir, opened.errno);
  const results: BuiltinRegistration[] = [];
  const installOne = (slug: string, sourceFd: number) =>
    deps.store.install(
      {
        slug,
        kind: "builtin",
        sourceVersion: BUILTIN_SOURCE_VERSION,
        fill: async (tempFd, fillSignal) => {
          try {
            await safeCopyTree(sys, sourceFd, tempFd, {
              limits,
              signal: fillSignal,
              durable: true,
            });
          } catch (err) {
            const reason = domainReasonOf(err);
            if (reason === "symlink_refused" || reason === "special_file_refused") {
              throw new ArchiveRejection(
                reason === "symlink_refused" ? "link_entry" : "special_entry",
                (err as Error).message,
              );
            }
            throw err;
          }
          return [];
        },
      },
      signal,
    );
  try {
    const listed = sys.readdirAt(opened.value, MAX_BUILTIN_SKILLS);
    if (!listed.ok) throw skillFsError("readdir", dir, listed.errno);
    for (const raw of listed.value.names.sort(Buffer.compare)) {
      signal.throwIfAborted();
      const slug = raw.toString("latin1");
      const source = isSkillSlug(slug) ? openDirAt(sys, opened.value, slug) : undefined;
      if (source === undefined || !source.ok) {
        deps.logger.warn({ slug }, "not a builtin skill directory: skipped");
        results.push({
          slug,
          status: "invalid",
          message: "not a skill directory with a valid slug",
        });
        continue;
      }
      try {
        const outcome = await installOne(slug, source.value);
        if (outcome.ok) {
          results.push({ slug, status: outcome.status });
        } else {
          const status = outcome.reason === "kind_conflict" ? "conflict" : "busy";
          deps.logger.error({ slug, reason: outcome.reason }, outcome.message);
          results.push({ slug, status, message: outcome.message });
        }
      } catch (err) {
        if (!(err instanceof ArchiveRejection)) throw err;
        // A packaging mistake (no SKILL.md, a symlink shipped…): this one is skipped.
        deps.logger.error({ slug, problem: err.problem }, err.message);
        results.push({ slug, status: "invalid", message: err.message });
      } finally {
        sys.close(source.value);
      }
    }
  } finally {
    sys.close(opened.value);
  }
  deps.logger.info({ builtins: results }, "builtin skills registered");
  return results;
}
