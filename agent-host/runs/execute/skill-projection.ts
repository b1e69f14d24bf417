import { lstat, mkdir } from "node:fs/promises";
import { join } from "node:path";
import { WorkcellError } from "../../../shared/errors/workcell-error.ts";
import { uidDirname } from "../../../shared/paths/uid-dirname.ts";

/**
 * What a refresh reports; agent-host/skills' `RefreshOutcome` has this shape (and more),
 * so its `ProjectionRefresher` is a SkillProjection as is.
 */
export interface SkillProjectionOutcome {
  /** True when the projection now equals the uid's grants exactly. */
  readonly ok: boolean;
  /**
   * Slugs in the projection after the refresh; null when the refresh could not touch it
   * (e.g. a lock wait timed out), so it may still hold a revoked skill.
   */
  readonly projected: readonly string[] | null;
  /** True when nothing had changed since the last refresh, so none ran (decision 0075). */
  readonly skipped?: boolean;
}

export interface SkillProjectionOptions {
  /**
   * The uid's grant version, read by the run's context load (RunContext.skillGrantVersion):
   * the refresh is skipped when it equals the version of the last ok refresh.
   */
  readonly grantVersion?: string;
}

/**
 * The seam to the skills subsystem: before a run's sandbox is acquired, the uid's
 * projection (`<data-root>/skills/projections/<uid dirname>/`, mounted read-only at
 * /home/gem/skills) is made to match the uid's grants (docs/architecture.md §6).
 */
export interface SkillProjection {
  refresh(
    uid: string,
    signal: AbortSignal,
    options?: SkillProjectionOptions,
  ): Promise<SkillProjectionOutcome>;
}

/** `<data-root>/skills/projections/`. */
export const PROJECTIONS_PATH = ["skills", "projections"] as const;

/**
 * Until the skills subsystem is wired: an empty projection directory, so the sandbox has
 * a (fail-closed, skill-less) mount. main.ts passes agent-host/skills' refresher instead.
 *
 * The data root is operator configuration and trusted; below it only directories this
 * process creates are used, and a symlink where the projection belongs is refused rather
 * than followed (the sandbox driver re-opens the path no-follow anyway).
 */
export function createEmptySkillProjection(deps: { readonly dataRoot: string }): SkillProjection {
  return {
    async refresh(uid, signal) {
      signal.throwIfAborted();
      const dir = join(deps.dataRoot, ...PROJECTIONS_PATH, uidDirname(uid));
      await mkdir(dir, { recursive: true, mode: 0o755 });
      const info = await lstat(dir);
      if (!info.isDirectory()) {
        throw new WorkcellError(
          "internal",
          "The skill projection path is not a directory: remove it so it can be recreated.",
          { details: { reason: "skill_projection_invalid" } },
        );
      }
      return { ok: true, projected: [] };
    },
  };
}
