import { eq, sql } from "drizzle-orm";
import type { Logger } from "pino";
import type { Db } from "../../shared/db/client.ts";
import { PG_LOCK_NOT_AVAILABLE, sqlStateOf } from "../../shared/db/pg-error.ts";
import { type SkillKind, skills } from "../../shared/db/schema/skills.ts";
import { WorkcellError } from "../../shared/errors/index.ts";
import { Errno, type FsSyscalls, RENAME_NOREPLACE } from "../workspace/syscalls.ts";
import { SKILL_MANIFEST } from "./archive-plan.ts";
import { ArchiveRejection } from "./archive-rejection.ts";
import { hashSkillTree } from "./safe-copy.ts";
import {
  BUILD_DIR_MODE,
  lstatAt,
  openDirAt,
  openSkillsSubdir,
  RENAME_EXCHANGE,
  removeQuietly,
  SKILL_DIR_MODE,
  SOURCES_DIR,
  skillFsError,
  swapInto,
  tempName,
} from "./skill-fs.ts";
import {
  DEFAULT_ADVISORY_LOCK_TIMEOUT_MS,
  DEFAULT_SKILL_LIMITS,
  type SkillLimits,
} from "./skill-limits.ts";
import { lockTimeoutSql, sourceLockKey } from "./skill-locks.ts";
import { readSkillManifestAt } from "./skill-manifest.ts";
import { isSkillSlug } from "./skill-slug.ts";

/** A catalogue row as the skills subsystem reports it. */
export interface CatalogueSkill {
  readonly slug: string;
  readonly kind: SkillKind;
  readonly description: string;
  readonly contentHash: string;
  readonly sourceVersion: string | null;
}

export type InstallOutcome =
  | {
      readonly ok: true;
      /** `unchanged`: the same content was already installed; nothing was touched. */
      readonly status: "installed" | "updated" | "unchanged";
      readonly skill: CatalogueSkill;
    }
  | {
      readonly ok: false;
      /** `kind_conflict`: a builtin and a shared skill cannot share a slug. */
      readonly reason: "kind_conflict" | "busy";
      readonly message: string;
    };

export interface InstallRequest {
  readonly slug: string;
  readonly kind: SkillKind;
  readonly sourceVersion: string | null;
  /**
   * Fills the empty private directory `tempFd` and returns where the skill root is inside
   * it (`[]` or `[dir]`). Throwing (e.g. an ArchiveRejection) aborts the install: the temp
   * directory is removed and the store and catalogue are untouched.
   */
  readonly fill: (tempFd: number, signal: AbortSignal) => Promise<readonly string[]>;
}

export interface SourceStoreDeps {
  readonly db: Db;
  readonly sys: FsSyscalls;
  readonly dataRoot: string;
  readonly logger: Logger;
  readonly limits?: Partial<SkillLimits>;
  readonly advisoryLockTimeoutMs?: number;
  /** fsync what is installed (default true): the catalogue must not point at lost bytes. */
  readonly durable?: boolean;
}

export interface SourceStore {
  install(request: InstallRequest, signal: AbortSignal): Promise<InstallOutcome>;
}

/**
 * The skill source store `<data-root>/skills/sources/<slug>/` and its catalogue rows.
 *
 * An install builds the new tree in a private temp directory beside the sources, checks
 * it (SKILL.md is a regular file at its root; only regular files and directories; limits),
 * hashes it, and only then, holding the slug's source lock exclusively in Postgres, swaps
 * it in and upserts the row in one transaction. Refreshes copy a source holding the same
 * lock shared, so they see the old directory with the old row or the new with the new.
 *
 * If the commit fails after the swap, the row is read again: a commit that did land (only
 * its acknowledgement was lost) keeps the new tree; otherwise the swap is undone. Should
 * even that fail, the directory and the row disagree, and every refresh refuses that slug
 * (its content hash check fails closed) until the skill is imported again.
 */
export function createSourceStore(deps: SourceStoreDeps): SourceStore {
  const limits: SkillLimits = { ...DEFAULT_SKILL_LIMITS, ...deps.limits };
  const lockTimeoutMs = deps.advisoryLockTimeoutMs ?? DEFAULT_ADVISORY_LOCK_TIMEOUT_MS;
  const { sys } = deps;

  async function storedHash(sourcesFd: number, slug: string, signal: AbortSignal) {
    const dir = openDirAt(sys, sourcesFd, slug);
    if (!dir.ok) return undefined;
    try {
      return (await hashSkillTree(sys, dir.value, { limits, signal })).contentHash;
    } catch (err) {
      if (signal.aborted) throw err;
      return undefined;
    } finally {
      sys.close(dir.value);
    }
  }

  async function readRow(slug: string) {
    const [row] = await deps.db
      .select({ contentHash: skills.contentHash })
      .from(skills)
      .where(eq(skills.slug, slug));
    return row;
  }

  /**
   * After a failed commit that followed the swap: keep the new tree if the row shows the
   * commit landed after all, else exchange the trees back (or take the new one out).
   */
  async function undoSwapUnlessCommitted(
    log: Logger,
    swap: { sourcesFd: number; treeDir: number; treeName: string; slug: string; hadOld: boolean },
    contentHash: string,
  ): Promise<void> {
    const row = await readRow(swap.slug).catch(() => undefined);
    if (row?.contentHash === contentHash) return;
    const undone = swap.hadOld
      ? sys.renameat2(swap.treeDir, swap.treeName, swap.sourcesFd, swap.slug, RENAME_EXCHANGE)
      : sys.renameat2(swap.sourcesFd, swap.slug, swap.treeDir, swap.treeName, 0);
    if (!undone.ok) {
      log.error(
        { errno: undone.errno },
        "could not undo a source swap after a failed commit: re-import the skill",
      );
    }
  }

  return {
    async install(request, signal) {
      signal.throwIfAborted();
      const { slug, kind } = request;
      if (!isSkillSlug(slug)) {
        throw new WorkcellError("invalid_request", `'${slug}' is not a valid skill slug.`, {
          details: { field: "slug" },
        });
      }
      const log = deps.logger.child({ slug, kind });
      const sourcesFd = openSkillsSubdir(sys, deps.dataRoot, SOURCES_DIR);
      const temp = tempName();
      let hoisted: string | undefined;
      try {
        const made = sys.mkdirat(sourcesFd, temp, BUILD_DIR_MODE);
        if (!made.ok) throw skillFsError("mkdir", temp, made.errno);
        const tempDir = openDirAt(sys, sourcesFd, temp);
        if (!tempDir.ok) throw skillFsError("open", temp, tempDir.errno);
        try {
          const root = await request.fill(tempDir.value, signal);
          signal.throwIfAborted();
          if (root.length > 1) throw new Error("a skill root is at most one directory deep");
          const top = root[0];
          // The tree that gets swapped in: the temp directory itself, or its one top
          // directory, first moved beside the sources so that every later rename stays in
          // one directory (moving a directory to another parent needs write access to it,
          // which a 0555 tree no longer grants a non-root agent-host).
          const treeDir = sourcesFd;
          let treeName = temp;
          if (top !== undefined) {
            treeName = hoistTop(tempDir.value, top, sourcesFd);
            hoisted = treeName;
          }
          const rootFd = top === undefined ? tempDir.value : openTop(sourcesFd, treeName);
          try {
            if (lstatAt(sys, rootFd, SKILL_MANIFEST)?.isFile() !== true) {
              throw new ArchiveRejection(
                "missing_skill_md",
                `A skill needs a ${SKILL_MANIFEST} at its root.`,
              );
            }
            const manifest = readSkillManifestAt(
              sys,
              rootFd,
              limits.maxManifestBytes,
              limits.maxDescriptionChars,
            );
            const { contentHash } = await hashSkillTree(sys, rootFd, { limits, signal });
            const chmod = sys.fchmod(rootFd, SKILL_DIR_MODE);
            if (!chmod.ok) throw skillFsError("chmod", slug, chmod.errno);
            const skill: CatalogueSkill = {
              slug,
              kind,
              description: manifest?.description ?? "",
              contentHash,
              sourceVersion: request.sourceVersion,
            };
            const swap = { sourcesFd, treeDir, treeName, slug, hadOld: false, swapped: false };
            try {
              const outcome = await deps.db.transaction(
                async (tx): Promise<InstallOutcome> => {
                  await tx.execute(lockTimeoutSql(lockTimeoutMs));
                  await tx.execute(sql`select pg_advisory_xact_lock(${sourceLockKey(slug)})`);
                  const [existing] = await tx
                    .select({ kind: skills.kind, contentHash: skills.contentHash })
                    .from(skills)
                    .where(eq(skills.slug, slug))
                    .for("update");
                  if (existing !== undefined && existing.kind !== kind) {
                    return {
                      ok: false,
                      reason: "kind_conflict",
                      message: `'${slug}' is already a ${existing.kind} skill: choose another slug.`,
                    };
                  }
                  if (
                    existing?.contentHash === contentHash &&
                    (await storedHash(sourcesFd, slug, signal)) === contentHash
                  ) {
                    return { ok: true, status: "unchanged", skill };
                  }
                  await tx
                    .insert(skills)
                    .values({
                      slug,
                      kind,
                      description: skill.description,
                      contentHash,
                      sourceVersion: request.sourceVersion,
                    })
                    .onConflictDoUpdate({
                      target: skills.slug,
                      set: {
                        description: skill.description,
                        contentHash,
                        sourceVersion: request.sourceVersion,
                        updatedAt: sql`now()`,
                      },
                    });
                  // The last step before the commit, under the exclusive source lock.
                  swap.hadOld = swapInto(sys, treeDir, treeName, sourcesFd, slug);
                  swap.swapped = true;
                  return {
                    ok: true,
                    status: existing === undefined ? "installed" : "updated",
                    skill,
                  };
                },
                { isolationLevel: "read committed" },
              );
              if (outcome.ok) {
                log.info(
                  { status: outcome.status, content_hash: contentHash },
                  "skill source installed",
                );
              }
              return outcome;
            } catch (err) {
              if (swap.swapped) await undoSwapUnlessCommitted(log, swap, contentHash);
              throw err;
            }
          } finally {
            if (rootFd !== tempDir.value) sys.close(rootFd);
          }
        } finally {
          sys.close(tempDir.value);
        }
      } catch (err) {
        if (sqlStateOf(err) === PG_LOCK_NOT_AVAILABLE) {
          return {
            ok: false,
            reason: "busy",
            message: "The skill is being changed by another import: retry.",
          };
        }
        throw err;
      } finally {
        // The failed build, or the replaced old tree the exchange left at the temp name.
        removeQuietly(sys, sourcesFd, temp);
        if (hoisted !== undefined) removeQuietly(sys, sourcesFd, hoisted);
        sys.close(sourcesFd);
      }
    },
  };

  function openTop(dirFd: number, name: string): number {
    const opened = openDirAt(sys, dirFd, name);
    if (!opened.ok) throw skillFsError("open", name, opened.errno);
    return opened.value;
  }

  /** Moves `temp/<top>` to a fresh temp name in the sources directory; returns that name. */
  function hoistTop(tempFd: number, top: string, sourcesFd: number): string {
    const topFd = openTop(tempFd, top);
    try {
      // Writable again for the move (the extractor left it 0555); 0555 comes back below.
      const chmod = sys.fchmod(topFd, BUILD_DIR_MODE);
      if (!chmod.ok) throw skillFsError("chmod", top, chmod.errno);
    } finally {
      sys.close(topFd);
    }
    const name = tempName();
    let moved = sys.renameat2(tempFd, top, sourcesFd, name, RENAME_NOREPLACE);
    // Without renameat2 flags (NFS): a fresh random name cannot be taken already.
    if (!moved.ok && moved.errno === Errno.EINVAL)
      moved = sys.renameat2(tempFd, top, sourcesFd, name, 0);
    if (!moved.ok) throw skillFsError("rename", top, moved.errno);
    return name;
  }
}
