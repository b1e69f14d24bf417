/**
 * Every bound of the skills subsystem, named, with its unit. Each factory takes a partial
 * override, so tests can shrink any of them (docs/style.md).
 */
export interface SkillLimits {
  /** Largest archive (compressed bytes) accepted for import. */
  readonly maxArchiveBytes: number;
  /** Most entries (files and directories) in an archive or a skill tree. */
  readonly maxEntries: number;
  /** Most bytes of all files of one skill together (uncompressed). */
  readonly maxSkillBytes: number;
  /** Most bytes of one file. */
  readonly maxFileBytes: number;
  /** Largest expansion (uncompressed / compressed) of one zip entry or of a gzip stream. */
  readonly maxCompressionRatio: number;
  /** Expansion up to this many bytes is never judged by ratio: tiny repetitive files compress well. */
  readonly ratioFloorBytes: number;
  /** Deepest directory level below the skill root (the root's children are level 1). */
  readonly maxDepth: number;
  /** Longest relative path inside a skill, in UTF-8 bytes. */
  readonly maxPathBytes: number;
  /** Longest single name, in UTF-8 bytes (Linux NAME_MAX). */
  readonly maxNameBytes: number;
  /** Most bytes of SKILL.md read to find the description. */
  readonly maxManifestBytes: number;
  /** Longest description kept from SKILL.md, in characters. */
  readonly maxDescriptionChars: number;
  /** Most personal skills listed for one user. */
  readonly maxPersonalSkills: number;
}

export const DEFAULT_MAX_ARCHIVE_BYTES = 64 * 1024 * 1024;
export const DEFAULT_MAX_SKILL_ENTRIES = 10_000;
export const DEFAULT_MAX_SKILL_BYTES = 256 * 1024 * 1024;
export const DEFAULT_MAX_SKILL_FILE_BYTES = 64 * 1024 * 1024;
export const DEFAULT_MAX_COMPRESSION_RATIO = 200;
export const DEFAULT_RATIO_FLOOR_BYTES = 1024 * 1024;
export const DEFAULT_MAX_SKILL_DEPTH = 32;
export const DEFAULT_MAX_SKILL_PATH_BYTES = 1024;
export const MAX_SKILL_NAME_BYTES = 255;
export const DEFAULT_MAX_MANIFEST_BYTES = 64 * 1024;
export const DEFAULT_MAX_DESCRIPTION_CHARS = 1024;
export const DEFAULT_MAX_PERSONAL_SKILLS = 200;

export const DEFAULT_SKILL_LIMITS: SkillLimits = Object.freeze({
  maxArchiveBytes: DEFAULT_MAX_ARCHIVE_BYTES,
  maxEntries: DEFAULT_MAX_SKILL_ENTRIES,
  maxSkillBytes: DEFAULT_MAX_SKILL_BYTES,
  maxFileBytes: DEFAULT_MAX_SKILL_FILE_BYTES,
  maxCompressionRatio: DEFAULT_MAX_COMPRESSION_RATIO,
  ratioFloorBytes: DEFAULT_RATIO_FLOOR_BYTES,
  maxDepth: DEFAULT_MAX_SKILL_DEPTH,
  maxPathBytes: DEFAULT_MAX_SKILL_PATH_BYTES,
  maxNameBytes: MAX_SKILL_NAME_BYTES,
  maxManifestBytes: DEFAULT_MAX_MANIFEST_BYTES,
  maxDescriptionChars: DEFAULT_MAX_DESCRIPTION_CHARS,
  maxPersonalSkills: DEFAULT_MAX_PERSONAL_SKILLS,
});

/** Waits of a projection refresh. */
export interface RefreshTimeouts {
  /** Longest wait for the uid's advisory lock (and the slugs' shared locks) in Postgres. */
  readonly advisoryLockTimeoutMs: number;
  /** Longest wait for the projection's flock. */
  readonly flockTimeoutMs: number;
  /** Pause between two non-blocking flock attempts. */
  readonly flockPollMs: number;
  /**
   * Longest wait for the end-of-refresh proof that the transaction (and so the advisory
   * lock) is still alive; a silent connection counts as lost and the projection is emptied.
   */
  readonly livenessTimeoutMs: number;
}

export const DEFAULT_ADVISORY_LOCK_TIMEOUT_MS = 30_000;
export const DEFAULT_FLOCK_TIMEOUT_MS = 30_000;
export const DEFAULT_FLOCK_POLL_MS = 5;
export const DEFAULT_LIVENESS_TIMEOUT_MS = 5_000;

export const DEFAULT_REFRESH_TIMEOUTS: RefreshTimeouts = Object.freeze({
  advisoryLockTimeoutMs: DEFAULT_ADVISORY_LOCK_TIMEOUT_MS,
  flockTimeoutMs: DEFAULT_FLOCK_TIMEOUT_MS,
  flockPollMs: DEFAULT_FLOCK_POLL_MS,
  livenessTimeoutMs: DEFAULT_LIVENESS_TIMEOUT_MS,
});

/**
 * File contents move with synchronous reads and writes (a skill is many small files, and a
 * thread-pool round trip per file would double a copy's time); the walk gives the event loop
 * back at least this often, so a large copy never stalls the daemon's HTTP server for long.
 */
export const COPY_SLICE_MS = 10;
/** Bytes per read when copying or hashing file contents. */
export const COPY_CHUNK_BYTES = 1024 * 1024;
