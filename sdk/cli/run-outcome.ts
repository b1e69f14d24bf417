import type { RunData, RunEvent } from "../src/index.ts";
import { EXIT } from "./cli-context.ts";

/** What `workcell run` tells the person (one line) and the script (the exit code). */
export type RunOutcome = { readonly line: string; readonly exitCode: number };

/**
 * The outcome of a finished run. A run of the shell model executed the input as one
 * command, and its `run.completed` carries that command's exit code: the run `succeeded`
 * (the command ran), but a non-zero code is reported as "command failed (exit 3)" and
 * becomes the CLI's exit code, the way `ssh host cmd` reports the remote command's.
 * A failed run (a timed-out command fails it with command_timeout) exits 1 with its
 * reason; a cancelled one 130.
 */
export function runOutcome(finished: RunData, completed: RunEvent | undefined): RunOutcome {
  const exitCode = completed?.type === "run.completed" ? completed.data.exit_code : undefined;
  switch (finished.status) {
    case "succeeded":
      if (exitCode === undefined || exitCode === 0) return { line: "succeeded", exitCode: EXIT.ok };
      return { line: `command failed (exit ${exitCode})`, exitCode };
    case "cancelled":
      return { line: "cancelled", exitCode: EXIT.cancelled };
    case "failed": {
      const why = finished.error ? `: ${finished.error.code} ${finished.error.message}` : "";
      return { line: `failed${why}`, exitCode: EXIT.failed };
    }
    default:
      // The event stream ended before the run did (it always ends with run.completed).
      return { line: `${finished.status} (not finished)`, exitCode: EXIT.failed };
  }
}
