/**
 * Every bound of the workspace layer, named, with its unit. A WorkspaceFs takes a partial
 * override at construction and most operations take one more per call, so tests can shrink
 * any of them.
 */
export interface WorkspaceLimits {
  /** Linux NAME_MAX: longest single name, in UTF-8 bytes. */
  readonly maxNameBytes: number;
  /** Linux PATH_MAX: longest relative path, in UTF-8 bytes. */
  readonly maxPathBytes: number;
  /** readFile: largest file read into memory. */
  readonly maxReadBytes: number;
  /** writeFile / writeStream: largest file written. */
  readonly maxWriteBytes: number;
  /** list: most entries returned from one directory. */
  readonly maxListEntries: number;
  /** search: deepest directory level visited below the start (start = 0). */
  readonly maxSearchDepth: number;
  /** search: most directory entries examined in total. */
  readonly maxSearchVisited: number;
  /** search: most matches returned. */
  readonly maxSearchResults: number;
  /** writeBatch: most files in one batch. */
  readonly maxBatchFiles: number;
  /** writeBatch: most bytes in one batch, all files together. */
  readonly maxBatchBytes: number;
  /** Recursive delete / copy: most entries in the tree. */
  readonly maxTreeEntries: number;
  /** Recursive delete / copy: deepest level (one descriptor is held per level). */
  readonly maxTreeDepth: number;
  /** Recursive copy: most bytes copied. */
  readonly maxCopyBytes: number;
  /** Attempts at a random temp name before giving up (a collision needs 64 random bits). */
  readonly maxTempNameAttempts: number;
}

export const MAX_NAME_BYTES = 255;
export const MAX_PATH_BYTES = 4096;
export const DEFAULT_MAX_READ_BYTES = 64 * 1024 * 1024;
export const DEFAULT_MAX_WRITE_BYTES = 1024 * 1024 * 1024;
export const DEFAULT_MAX_LIST_ENTRIES = 10_000;
export const DEFAULT_MAX_SEARCH_DEPTH = 16;
export const DEFAULT_MAX_SEARCH_VISITED = 50_000;
export const DEFAULT_MAX_SEARCH_RESULTS = 500;
export const DEFAULT_MAX_BATCH_FILES = 100;
export const DEFAULT_MAX_BATCH_BYTES = 1024 * 1024 * 1024;
export const DEFAULT_MAX_TREE_ENTRIES = 100_000;
export const DEFAULT_MAX_TREE_DEPTH = 64;
export const DEFAULT_MAX_COPY_BYTES = 4 * 1024 * 1024 * 1024;
export const DEFAULT_MAX_TEMP_NAME_ATTEMPTS = 8;

export const DEFAULT_WORKSPACE_LIMITS: WorkspaceLimits = Object.freeze({
  maxNameBytes: MAX_NAME_BYTES,
  maxPathBytes: MAX_PATH_BYTES,
  maxReadBytes: DEFAULT_MAX_READ_BYTES,
  maxWriteBytes: DEFAULT_MAX_WRITE_BYTES,
  maxListEntries: DEFAULT_MAX_LIST_ENTRIES,
  maxSearchDepth: DEFAULT_MAX_SEARCH_DEPTH,
  maxSearchVisited: DEFAULT_MAX_SEARCH_VISITED,
  maxSearchResults: DEFAULT_MAX_SEARCH_RESULTS,
  maxBatchFiles: DEFAULT_MAX_BATCH_FILES,
  maxBatchBytes: DEFAULT_MAX_BATCH_BYTES,
  maxTreeEntries: DEFAULT_MAX_TREE_ENTRIES,
  maxTreeDepth: DEFAULT_MAX_TREE_DEPTH,
  maxCopyBytes: DEFAULT_MAX_COPY_BYTES,
  maxTempNameAttempts: DEFAULT_MAX_TEMP_NAME_ATTEMPTS,
});

/** New directories: owner only. Applied with fchmod, so the process umask cannot change it. */
export const DIR_MODE = 0o700;
/** New files: owner read/write only. */
export const FILE_MODE = 0o600;
/** Prefix of in-flight temp files and temp directories (copy). */
export const TEMP_PREFIX = ".wc-tmp-";
