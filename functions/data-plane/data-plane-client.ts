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
  ): Promise<WorkdirCheck>;
}
