import type { Logger } from "pino";
import { domainReasonOf, WorkcellError } from "../../shared/errors/index.ts";
import { Errno, type FsSyscalls } from "../workspace/syscalls.ts";
import type { RefreshFailure, RefreshFailureReason } from "./projection-refresher.ts";
import {
  type ProjectionState,
  readProjectionState,
  writeProjectionState,
} from "./projection-state.ts";
import { hashSkillTree, safeCopyTree } from "./safe-copy.ts";
import {
  BUILD_DIR_MODE,
  ensureDirAt,
  fstatFd,
  HOST_DIR_MODE,
  isTempName,
  lstatAt,
  openDirAt,
  removeEntryAt,
  removeQuietly,
  SKILL_DIR_MODE,
  skillFsError,
  swapInto,
  tempName,
} from "./skill-fs.ts";
import type { SkillLimits } from "./skill-limits.ts";
import { isSkillSlug } from "./skill-slug.ts";
import { fingerprintDirectories } from "./source-fingerprint.ts";

/** A granted skill and the content hash the catalogue recorded for it. */
export interface DesiredSkill {
  readonly slug: string;
  readonly contentHash: string;
}

export interface ApplyResult {
  readonly projected: string[];
  readonly copied: string[];
  readonly unchanged: string[];
  readonly removed: string[];
  readonly failures: RefreshFailure[];
}

export interface ApplyDeps {
  readonly sys: FsSyscalls;
  readonly limits: SkillLimits;
  readonly logger: Logger;
  readonly onCopyEntry?: (slug: string, path: string) => void | Promise<void>;
}

export interface ApplyTarget {
  /** `<data-root>/skills/projections`, whose flock for `dirname` the caller holds. */
  readonly projectionsFd: number;
  /** `<data-root>/skills/sources`. */
  readonly sourcesFd: number;
  readonly dirname: string;
  readonly uid: string;
}

/** Upper bound on names read from a projection root: more than any user can be granted. */
export const MAX_PROJECTION_ROOT_ENTRIES = 100_000;

/**
 * Makes the projection directory hold exactly `desired` (the caller holds the flock):
 * first removes every entry that is not a granted slug (symlinks unlinked as links, never
 * followed; temp directories of a crashed refresh too), then projects each granted slug.
 *
 * The projection root itself is never replaced, only its entries: a running sandbox has it
 * bind-mounted, and a bind mount pins the directory inode, so swapping the root would leave
 * live sandboxes on the old one. Renames inside it are seen by every mount at once.
 *
 * Any failure for one slug removes that slug's projection (fail closed) and is reported;
 * the other slugs are still brought up to date.
 */
export async function applyProjection(
  deps: ApplyDeps,
  target: ApplyTarget,
  desired: readonly DesiredSkill[],
  signal: AbortSignal,
): Promise<ApplyResult> {
  const { sys } = deps;
  const result: ApplyResult = {
    projected: [],
    copied: [],
    unchanged: [],
    removed: [],
    failures: [],
  };
  const wanted = new Map<string, DesiredSkill>();
  for (const skill of desired) {
    if (isSkillSlug(skill.slug)) wanted.set(skill.slug, skill);
    else
      result.failures.push(
        failure(
          skill.slug,
          "source_invalid",
          "The slug is not a valid skill slug: it is never projected.",
        ),
      );
  }
  const rootFd = ensureDirAt(sys, target.projectionsFd, target.dirname, HOST_DIR_MODE);
  try {
    const state = readProjectionState(sys, target.projectionsFd, target.dirname);
    const stateAsRead = JSON.stringify(state);
    try {
      removeUngranted(sys, rootFd, wanted, state, result);
      for (const skill of wanted.values()) {
        signal.throwIfAborted();
        try {
          const done = await projectSlug(deps, target, rootFd, skill, state, signal);
          (done === "copied" ? result.copied : result.unchanged).push(skill.slug);
        } catch (err) {
          if (signal.aborted) throw err;
          // Fail closed for this slug: whatever was projected for it goes.
          removeQuietly(sys, rootFd, skill.slug);
          delete state.slugs[skill.slug];
          const reason = reasonOf(err);
          deps.logger.warn(
            { err, uid: target.uid, slug: skill.slug, reason },
            "skill not projected",
          );
          result.failures.push(failure(skill.slug, reason, messageOf(err)));
        }
      }
    } finally {
      // A no-op refresh writes nothing at all.
      if (JSON.stringify(state) !== stateAsRead) {
        writeProjectionState(sys, target.projectionsFd, target.dirname, state);
      }
    }
    result.projected.push(...listProjected(sys, rootFd));
    return result;
  } finally {
    sys.close(rootFd);
  }
}

function removeUngranted(
  sys: FsSyscalls,
  rootFd: number,
  wanted: ReadonlyMap<string, DesiredSkill>,
  state: ProjectionState,
  result: ApplyResult,
): void {
  const listed = sys.readdirAt(rootFd, MAX_PROJECTION_ROOT_ENTRIES);
  if (!listed.ok) throw skillFsError("readdir", "projection", listed.errno);
  for (const raw of listed.value.names) {
    // Slugs are ASCII; latin1 maps bytes one to one, so no other name can decode to one.
    const name = raw.toString("latin1");
    const st = lstatAt(sys, rootFd, raw);
    if (st === undefined) continue;
    if (wanted.has(name) && st.isDirectory()) continue;
    // Not granted, a temp directory left by a crash, or a granted name that is not a real
    // directory: removed as whatever it is, a symlink as a link.
    removeEntryAt(sys, rootFd, raw);
    if (!isTempName(name)) result.removed.push(name);
  }
  for (const slug of Object.keys(state.slugs)) {
    if (!wanted.has(slug)) delete state.slugs[slug];
  }
}

async function projectSlug(
  deps: ApplyDeps,
  target: ApplyTarget,
  rootFd: number,
  skill: DesiredSkill,
  state: ProjectionState,
  signal: AbortSignal,
): Promise<"copied" | "unchanged"> {
  const { sys, limits } = deps;
  const source = openDirAt(sys, target.sourcesFd, skill.slug);
  if (!source.ok) {
    if (source.errno === Errno.ENOENT)
      throw new SlugFailure(
        "source_missing",
        "The skill has no source directory: import it again.",
      );
    if (source.errno === Errno.ELOOP || source.errno === Errno.ENOTDIR) {
      throw new SlugFailure("source_refused", "The skill's source is not a real directory.");
    }
    throw skillFsError("open", `sources/${skill.slug}`, source.errno);
  }
  try {
    const current = lstatAt(sys, rootFd, skill.slug);
    const previous = state.slugs[skill.slug];
    const intact =
      current?.isDirectory() === true && previous !== undefined && current.ino === previous.dirIno;
    // The no-op check: the same catalogue hash, an intact projection, and a source whose
    // directories did not change since it was copied (source-fingerprint.ts says why that
    // covers planted special files). No file is read; the copy computes the fingerprint.
    if (
      intact &&
      previous.contentHash === skill.contentHash &&
      fingerprintDirectories(sys, source.value, previous.sourceDirs) === previous.sourceFingerprint
    ) {
      return "unchanged";
    }
    const temp = tempName();
    const made = sys.mkdirat(rootFd, temp, BUILD_DIR_MODE);
    if (!made.ok) throw skillFsError("mkdir", temp, made.errno);
    try {
      const tempDir = openDirAt(sys, rootFd, temp);
      if (!tempDir.ok) throw skillFsError("open", temp, tempDir.errno);
      try {
        const onCopyEntry = deps.onCopyEntry;
        const copy = await safeCopyTree(sys, source.value, tempDir.value, {
          limits,
          signal,
          ...(onCopyEntry ? { onEntry: (path: string) => onCopyEntry(skill.slug, path) } : {}),
        });
        if (copy.contentHash !== skill.contentHash) {
          throw new SlugFailure(
            "source_mismatch",
            "The skill's source does not match the catalogue's content hash: import it again.",
          );
        }
        if (current?.isDirectory() === true) {
          const same = intact
            ? previous.contentHash === copy.contentHash
            : await projectedHashEquals(deps, rootFd, skill.slug, copy.contentHash, signal);
          if (same) {
            // Identical content is already projected: keep that directory (and its inode).
            state.slugs[skill.slug] = {
              contentHash: copy.contentHash,
              sourceFingerprint: copy.fingerprint,
              sourceDirs: [...copy.directoryPaths],
              dirIno: current.ino,
            };
            return "unchanged";
          }
        }
        const chmod = sys.fchmod(tempDir.value, SKILL_DIR_MODE);
        if (!chmod.ok) throw skillFsError("chmod", temp, chmod.errno);
        const dirIno = fstatFd(sys, tempDir.value, temp).ino;
        swapInto(sys, rootFd, temp, rootFd, skill.slug);
        state.slugs[skill.slug] = {
          contentHash: copy.contentHash,
          sourceFingerprint: copy.fingerprint,
          sourceDirs: [...copy.directoryPaths],
          dirIno,
        };
        return "copied";
      } finally {
        sys.close(tempDir.value);
      }
    } finally {
      // The failed copy, or the old tree the swap put at the temp name: never left behind.
      removeQuietly(sys, rootFd, temp);
    }
  } finally {
    sys.close(source.value);
  }
}

/** Without a trustworthy state entry, whether the projected directory already holds `hash`. */
async function projectedHashEquals(
  deps: ApplyDeps,
  rootFd: number,
  slug: string,
  hash: string,
  signal: AbortSignal,
): Promise<boolean> {
  const dir = openDirAt(deps.sys, rootFd, slug);
  if (!dir.ok) return false;
  try {
    return (
      (await hashSkillTree(deps.sys, dir.value, { limits: deps.limits, signal })).contentHash ===
      hash
    );
  } catch (err) {
    if (signal.aborted) throw err;
    return false;
  } finally {
    deps.sys.close(dir.value);
  }
}

function listProjected(sys: FsSyscalls, rootFd: number): string[] {
  const listed = sys.readdirAt(rootFd, MAX_PROJECTION_ROOT_ENTRIES);
  if (!listed.ok) throw skillFsError("readdir", "projection", listed.errno);
  return listed.value.names
    .map((raw) => raw.toString("latin1"))
    .filter((name) => !isTempName(name))
    .sort();
}

/** A per-slug failure that is not an error of the machinery. */
class SlugFailure extends Error {
  override readonly name = "SlugFailure";
  readonly reason: RefreshFailureReason;

  constructor(reason: RefreshFailureReason, message: string) {
    super(message);
    this.reason = reason;
  }
}

function reasonOf(err: unknown): RefreshFailureReason {
  if (err instanceof SlugFailure) return err.reason;
  const reason = domainReasonOf(err);
  if (reason === "symlink_refused" || reason === "special_file_refused") return "source_refused";
  if (err instanceof WorkcellError && err.code !== "internal") return "source_invalid";
  return "copy_failed";
}

function messageOf(err: unknown): string {
  if (err instanceof SlugFailure || err instanceof WorkcellError) return err.message;
  return "The skill could not be copied into the projection.";
}

function failure(slug: string, reason: RefreshFailureReason, message: string): RefreshFailure {
  return { slug, reason, message };
}
