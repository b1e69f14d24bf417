import { sql } from "drizzle-orm";
import type { Logger } from "pino";
import { untilAborted } from "../../shared/async/until-aborted.ts";
import type { Db, DbTransaction } from "../../shared/db/client.ts";
import { PG_LOCK_NOT_AVAILABLE, sqlStateOf } from "../../shared/db/pg-error.ts";
import { uidDirname } from "../../shared/paths/uid-dirname.ts";
import type { FsSyscalls } from "../workspace/syscalls.ts";
import { createKnownProjections, type KnownProjections } from "./known-projections.ts";
import { type ApplyResult, applyProjection, type DesiredSkill } from "./projection-apply.ts";
import { lockProjection } from "./projection-lock.ts";
import { readDesiredSkills } from "./read-desired-skills.ts";
import type { RefreshFailure, RefreshOptions, RefreshOutcome } from "./refresh-outcome.ts";
import { openSkillsSubdir, PROJECTIONS_DIR, SOURCES_DIR } from "./skill-fs.ts";
import {
  DEFAULT_REFRESH_TIMEOUTS,
  DEFAULT_SKILL_LIMITS,
  type RefreshTimeouts,
  type SkillLimits,
} from "./skill-limits.ts";
import { lockTimeoutSql } from "./skill-locks.ts";
import { takeGrantLock } from "./take-grant-lock.ts";

export type {
  RefreshFailure,
  RefreshFailureReason,
  RefreshOptions,
  RefreshOutcome,
} from "./refresh-outcome.ts";

/** Test seams and tracing hooks; none of them may throw in production wiring. */
export interface RefreshHooks {
  /**
   * The uid's grant lock was held by someone else (a grant change in progress) when the
   * refresh tried it; the refresh now waits for it.
   */
  readonly onGrantLockBusy?: (uid: string) => void | Promise<void>;
  /** Right after the flock is taken. */
  readonly onLocked?: (uid: string) => void | Promise<void>;
  /** Right before the flock is released. */
  readonly onUnlocking?: (uid: string) => void | Promise<void>;
  /** Before each source entry is opened during a copy. */
  readonly onCopyEntry?: (slug: string, path: string) => void | Promise<void>;
}

export interface ProjectionRefresherDeps {
  readonly db: Db;
  readonly sys: FsSyscalls;
  /** The agent-host's data root (operator configuration, trusted). */
  readonly dataRoot: string;
  readonly logger: Logger;
  readonly limits?: Partial<SkillLimits>;
  readonly timeouts?: Partial<RefreshTimeouts>;
  readonly hooks?: RefreshHooks;
  /** Default: a fresh in-memory record per refresher (known-projections.ts). */
  readonly known?: KnownProjections;
}

export interface ProjectionRefresher {
  /** Makes `<data-root>/skills/projections/<uid dirname>/` equal the uid's grants. */
  refresh(uid: string, signal: AbortSignal, options?: RefreshOptions): Promise<RefreshOutcome>;
}

/**
 * Projection refresh, exactly in the order of docs/architecture.md §6:
 *
 * 1. A READ COMMITTED transaction takes `pg_advisory_xact_lock` on the uid. The control
 *    plane takes the same lock to change a grant, so a refresh that waited here while a
 *    revoke committed reads the grants after the revoke. (READ COMMITTED matters: under
 *    REPEATABLE READ the snapshot would date from the lock statement, before the revoke.)
 * 2. Inside it, the grants are re-read (never taken from the caller), then each granted
 *    slug's source lock is taken shared and its catalogue row read, so an import cannot
 *    swap a source while we copy it.
 * 3. Holding the projection's exclusive flock (projection-lock.ts): ungranted slugs are
 *    removed, then each granted slug is safely copied into a temp directory beside it and
 *    swapped in if its content differs (projection-apply.ts).
 * 4. Still under both locks, one more query proves the transaction (and so the advisory
 *    lock) survived the copy. If the connection dropped, or stays silent for
 *    `livenessTimeoutMs`, a revoke may have slipped in: the projection is emptied (fail
 *    closed) before the flock is released.
 *
 * 5. A fully ok refresh remembers the grant version it read with the grants (step 2), under
 *    the flock; a run that passes a version equal to it skips all of the above
 *    (known-projections.ts, decision 0075). Any other outcome forgets it.
 *
 * The advisory lock is held until the end, not just for the read: otherwise a slow refresh
 * holding stale grants could take the flock after the revoke's own refresh and copy a
 * revoked skill back. Grants that cannot be read at all fail closed too: the projection is
 * emptied, never left as it was.
 */
export function createProjectionRefresher(deps: ProjectionRefresherDeps): ProjectionRefresher {
  const limits: SkillLimits = { ...DEFAULT_SKILL_LIMITS, ...deps.limits };
  const timeouts: RefreshTimeouts = { ...DEFAULT_REFRESH_TIMEOUTS, ...deps.timeouts };
  const { sys, hooks } = deps;
  const known = deps.known ?? createKnownProjections({ sys, dataRoot: deps.dataRoot });

  /** Runs `fn` holding the uid's flock; "timeout" when it could not be had in time. */
  async function underFlock<T>(
    uid: string,
    dirname: string,
    signal: AbortSignal,
    fn: (projectionsFd: number, sourcesFd: number) => Promise<T>,
  ): Promise<T | "timeout"> {
    const projectionsFd = openSkillsSubdir(sys, deps.dataRoot, PROJECTIONS_DIR);
    try {
      const lock = await lockProjection(sys, projectionsFd, dirname, {
        timeoutMs: timeouts.flockTimeoutMs,
        pollMs: timeouts.flockPollMs,
        signal,
      });
      if (lock === "timeout") return "timeout";
      try {
        await hooks?.onLocked?.(uid);
        const sourcesFd = openSkillsSubdir(sys, deps.dataRoot, SOURCES_DIR);
        try {
          return await fn(projectionsFd, sourcesFd);
        } finally {
          sys.close(sourcesFd);
        }
      } finally {
        try {
          await hooks?.onUnlocking?.(uid);
        } finally {
          lock.release();
        }
      }
    } finally {
      sys.close(projectionsFd);
    }
  }

  function apply(
    uid: string,
    dirname: string,
    projectionsFd: number,
    sourcesFd: number,
    desired: readonly DesiredSkill[],
    signal: AbortSignal,
  ): Promise<ApplyResult> {
    return applyProjection(
      {
        sys,
        limits,
        logger: deps.logger,
        ...(hooks?.onCopyEntry ? { onCopyEntry: hooks.onCopyEntry } : {}),
      },
      { projectionsFd, sourcesFd, dirname, uid },
      desired,
      signal,
    );
  }

  /** Empties the projection: what a refresh does when it cannot know the grants. */
  async function failClosed(
    uid: string,
    dirname: string,
    signal: AbortSignal,
    message: string,
  ): Promise<RefreshOutcome> {
    const failure: RefreshFailure = { slug: null, reason: "grants_unavailable", message };
    const emptied = await underFlock(uid, dirname, signal, (projectionsFd, sourcesFd) => {
      known.forget(uid);
      return apply(uid, dirname, projectionsFd, sourcesFd, [], signal);
    });
    if (emptied === "timeout") return busy(failure);
    return { ...outcomeOf(emptied), ok: false, failures: [failure] };
  }

  /** Whether the transaction, and with it the uid's advisory lock, is still ours. */
  async function stillLocked(tx: DbTransaction, txFailed: AbortSignal): Promise<boolean> {
    if (txFailed.aborted) return false;
    // A silent connection (a network partition) never answers: bounded by the liveness
    // timeout, and by the transaction failing meanwhile.
    const probe = tx.execute(sql`select 1`).then(() => true);
    const deadline = AbortSignal.any([txFailed, AbortSignal.timeout(timeouts.livenessTimeoutMs)]);
    return untilAborted(probe, deadline).then(
      (ok) => ok && !txFailed.aborted,
      () => false,
    );
  }

  /**
   * The transaction's body: the grant lock and the grants (steps 1-2), then the
   * projection under the flock (3) and the liveness check (4). It always ends: the grants
   * phase's queries give up when the transaction fails or the caller aborts (`stop`), and
   * past them its only query is the bounded liveness probe. Failures of the grants phase
   * are a value (`grants_failed`); one while projecting is thrown.
   */
  async function projectUnderGrantLock(
    tx: DbTransaction,
    target: { uid: string; dirname: string; log: Logger },
    stop: AbortSignal,
    txFailed: AbortSignal,
  ): Promise<BodyResult> {
    const { uid, dirname, log } = target;
    let desired: DesiredSkill[];
    let grantVersion: string;
    try {
      await untilAborted(tx.execute(lockTimeoutSql(timeouts.advisoryLockTimeoutMs)), stop);
      await takeGrantLock(tx, uid, stop, hooks?.onGrantLockBusy);
      ({ skills: desired, grantVersion } = await untilAborted(readDesiredSkills(tx, uid), stop));
      stop.throwIfAborted();
    } catch (error) {
      return { kind: "grants_failed", error };
    }
    const applied = await underFlock(uid, dirname, stop, async (projectionsFd, sourcesFd) => {
      known.forget(uid);
      const result = await apply(uid, dirname, projectionsFd, sourcesFd, desired, stop);
      if (await stillLocked(tx, txFailed)) {
        const outcome = outcomeOf(result);
        // Still under the grant lock: no grant change committed since the version was read.
        if (outcome.ok) known.remember(uid, dirname, grantVersion, result.projected);
        return { outcome, lost: false };
      }
      // A revoke may have committed unseen since the lock went: fail closed before the
      // flock is released.
      log.error("database lost during the refresh: emptying the projection");
      const emptied = await apply(uid, dirname, projectionsFd, sourcesFd, [], stop);
      return {
        outcome: {
          ...outcomeOf(emptied),
          ok: false,
          failures: [
            {
              slug: null,
              reason: "grants_unavailable" as const,
              message:
                "The database connection was lost during the refresh: the projection was emptied.",
            },
          ],
        },
        lost: true,
      };
    });
    if (applied === "timeout") {
      const message = "Another refresh of this projection held its lock too long: retry.";
      return {
        kind: "projected",
        outcome: busy({ slug: null, reason: "busy", message }),
        lost: false,
      };
    }
    return { kind: "projected", ...applied };
  }

  return {
    async refresh(uid, signal, options) {
      signal.throwIfAborted();
      const dirname = uidDirname(uid);
      // No `component` of its own: the skills logger carries one, and pino would repeat the key.
      const log = deps.logger.child({ uid });
      if (options?.grantVersion !== undefined) {
        const projected = known.current(uid, dirname, options.grantVersion);
        if (projected !== undefined) {
          log.debug({ projected }, "skills projection unchanged since its last refresh: skipped");
          return skippedOutcome(projected);
        }
      }
      // Whatever this refresh does, the record no longer describes the projection.
      known.forget(uid);
      // postgres.js rejects a transaction the moment its connection closes, while the
      // body may still be copying under the flock: the body is then waited for (it holds
      // the flock) and its queries give up at once.
      const txFailed = new AbortController();
      const stop = AbortSignal.any([signal, txFailed.signal]);
      const started = Promise.withResolvers<Promise<BodyResult>>();
      const transaction = deps.db.transaction(
        async (tx) => {
          const body = projectUnderGrantLock(tx, { uid, dirname, log }, stop, txFailed.signal);
          started.resolve(body);
          const result = await body;
          if (result.kind === "grants_failed") throw result.error;
          // Never commit on a connection we know is gone.
          if (result.lost) throw new Error("database connection lost during the refresh");
        },
        { isolationLevel: "read committed" },
      );
      const transactionEnd = transaction.then(
        () => undefined,
        (error: unknown) => {
          txFailed.abort(error);
          return { error };
        },
      );
      // The body once it has started (it always ends, see projectUnderGrantLock); until
      // then the transaction failing to begin, or the caller giving up.
      const begun = await untilAborted(
        Promise.race([started.promise.then((body) => ({ body })), transactionEnd]),
        signal,
      );
      const result: BodyResult =
        begun !== undefined && "body" in begun
          ? await begun.body
          : { kind: "grants_failed", error: begun?.error };
      if (result.kind === "projected") {
        // Projected and verified under the lock (or emptied): only the commit is left.
        // Waited for, so the grant lock is free when we answer, but bounded: a commit on
        // a silent connection does not hold the answer up.
        if (!result.lost) {
          await untilAborted(transactionEnd, AbortSignal.timeout(timeouts.livenessTimeoutMs)).catch(
            () => {},
          );
        }
        return logged(log, result.outcome);
      }
      if (signal.aborted) throw result.error;
      if (sqlStateOf(result.error) === PG_LOCK_NOT_AVAILABLE) {
        const message = "The user's grants are locked by another operation: retry.";
        return logged(log, busy({ slug: null, reason: "busy", message }));
      }
      log.error({ err: result.error }, "grants unavailable: emptying the projection (fail closed)");
      const message = "The grants could not be read: the projection was emptied.";
      return logged(log, await failClosed(uid, dirname, signal, message));
    },
  };
}

/** What the transaction's body came to (see projectUnderGrantLock). */
type BodyResult =
  | { readonly kind: "projected"; readonly outcome: RefreshOutcome; readonly lost: boolean }
  | { readonly kind: "grants_failed"; readonly error: unknown };

function outcomeOf(result: ApplyResult): RefreshOutcome {
  return {
    ok: result.failures.length === 0,
    projected: result.projected,
    copied: result.copied,
    unchanged: result.unchanged,
    removed: result.removed,
    failures: result.failures,
    skipped: false,
  };
}

function skippedOutcome(projected: readonly string[]): RefreshOutcome {
  return {
    ok: true,
    projected,
    copied: [],
    unchanged: projected,
    removed: [],
    failures: [],
    skipped: true,
  };
}

function busy(failure: RefreshFailure): RefreshOutcome {
  return {
    ok: false,
    projected: null,
    copied: [],
    unchanged: [],
    removed: [],
    failures: [failure],
    skipped: false,
  };
}

function logged(log: Logger, outcome: RefreshOutcome | undefined): RefreshOutcome {
  if (outcome === undefined) throw new Error("refresh finished without an outcome");
  const summary = {
    projected: outcome.projected,
    copied: outcome.copied,
    removed: outcome.removed,
    failures: outcome.failures,
  };
  if (outcome.ok) log.info(summary, "skills projection refreshed");
  else log.warn(summary, "skills projection refresh failed");
  return outcome;
}
