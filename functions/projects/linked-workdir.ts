import { assertNever } from "../../shared/assert-never.ts";
import type { ProjectCreateRequest } from "../../shared/contracts/project.ts";
import { domainError } from "../../shared/errors/domain-errors.ts";
import { WorkcellError } from "../../shared/errors/workcell-error.ts";
import { normalizeWorkdirPath } from "../../shared/paths/normalize-workdir-path.ts";
import type { DataPlaneClient } from "../data-plane/data-plane-client.ts";
import type { RequestOrigin } from "../data-plane/request-origin.ts";

/**
 * The canonical Workdir of a project create request, or undefined for a managed project.
 * A linked directory must already exist as a real directory in the caller's UserWorkspace;
 * only the data plane can tell (functions/ never touches workspace bytes).
 */
export async function linkedWorkdir(
  dataPlane: DataPlaneClient,
  uid: string,
  request: ProjectCreateRequest,
  signal: AbortSignal,
  origin?: RequestOrigin,
): Promise<string | undefined> {
  if (request.workdir_path === undefined) return undefined;
  const workdirPath = normalizeWorkdirPath(request.workdir_path);
  const outcome = await dataPlane.checkExistingWorkdir(uid, workdirPath, signal, origin);
  switch (outcome) {
    case "ok":
      return workdirPath;
    case "not_found":
      throw domainError("workdir_missing", { details: { field: "workdir_path" } });
    case "invalid":
      throw new WorkcellError(
        "invalid_request",
        "workdir_path names a file, not a directory: pick a directory of your workspace.",
        { details: { field: "workdir_path", reason: "not_a_directory" } },
      );
    case "forbidden":
      // docs/api.md: a symlink is a 400 here (a bad value for the field), not a 403.
      throw new WorkcellError(
        "invalid_request",
        "workdir_path goes through a symbolic link, which is never followed: use the real directory.",
        { details: { field: "workdir_path", reason: "symlink_refused" } },
      );
    default:
      return assertNever(outcome, "workdir check outcome");
  }
}
