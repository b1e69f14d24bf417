// What a projection refresh reports (projection-refresher.ts).

export type RefreshFailureReason =
  /** A symlink, FIFO, socket or device in the source: the slug's projection was removed. */
  | "source_refused"
  /** Granted, but there is no source directory: nothing is projected for it. */
  | "source_missing"
  /** The copied bytes do not hash to the catalogue's content hash: removed. */
  | "source_mismatch"
  /** Over a limit, changed during the copy, or a slug that is not valid: removed. */
  | "source_invalid"
  /** An I/O error while projecting the slug: removed. */
  | "copy_failed"
  /** The grants could not be read (or the database was lost mid-refresh): emptied. */
  | "grants_unavailable"
  /** A lock wait timed out: nothing changed. */
  | "busy";

export interface RefreshFailure {
  /** The slug concerned; null for a failure of the whole refresh. */
  readonly slug: string | null;
  readonly reason: RefreshFailureReason;
  readonly message: string;
}

/**
 * The result of a refresh, always a value. `ok` means the projection now equals the
 * grants exactly. Whatever failed, a revoked slug is gone whenever `projected` is not null:
 * removal of ungranted slugs happens before anything can fail per slug.
 */
export interface RefreshOutcome {
  readonly ok: boolean;
  /** Slugs in the projection after the refresh, sorted; null when it was not touched. */
  readonly projected: readonly string[] | null;
  /** Copied and swapped in. */
  readonly copied: readonly string[];
  /** Already up to date (the directory, and its inode, were kept). */
  readonly unchanged: readonly string[];
  /** Removed because no longer granted (or not a skill at all). */
  readonly removed: readonly string[];
  readonly failures: readonly RefreshFailure[];
  /**
   * True when nothing was done: the caller's grant version equals the one the last ok
   * refresh in this process read, and the projection root is as that refresh left it.
   */
  readonly skipped: boolean;
}

export interface RefreshOptions {
  /**
   * The uid's grant version as the caller just read it (shared/db/skill-grant-version.ts).
   * Given, the refresh is skipped when nothing changed since this process's last ok
   * refresh of the uid (decision 0075); absent (a grant change's own refresh), it runs.
   */
  readonly grantVersion?: string;
}
