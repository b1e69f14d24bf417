import type { RequestOrigin } from "./request-origin.ts";

/**
 * Outcome of the data plane's open-existing check for a linked project's directory:
 * `ok` (a real directory), `not_found` (missing), `invalid` (exists but is not a
 * directory) or `forbidden` (a symlink somewhere on the way, which is never followed).
 */
export type WorkdirCheck = "ok" | "not_found" | "invalid" | "forbidden";

/**
 * The seam to the agent-host data plane, the only code that touches workspace bytes.
 * Expected outcomes are values; a data plane that cannot be reached throws
 * `unavailable`.
 */
export interface DataPlaneClient {
  checkExistingWorkdir(
    uid: string,
    workdirPath: string,
    signal: AbortSignal,
    /** The API request the check is made for (its id and trace travel along). */
    origin?: RequestOrigin,
  ): Promise<WorkdirCheck>;
  /**
   * `uid`'s UserWorkspace usage as the data plane's quota accounting sees it (the figure its
   * writes are checked against; docs/decisions/0049 says how fresh).
   */
  workspaceUsage(
    uid: string,
    signal: AbortSignal,
    /** The API request the read is made for (its id and trace travel along). */
    origin?: RequestOrigin,
  ): Promise<WorkspaceUsageFigures>;
}

/** Bytes of regular files and inodes (every entry) of one UserWorkspace. */
export type WorkspaceUsageFigures = {
  readonly workspaceBytes: number;
  readonly workspaceInodes: number;
};
