import { domainError, WorkcellError } from "../../shared/errors/index.ts";
import { isSandboxRuntimePath } from "../../shared/paths/index.ts";
import { DEFAULT_WORKSPACE_LIMITS, type WorkspaceLimits } from "./workspace-limits.ts";
import { splitWorkspacePath } from "./workspace-path.ts";

/**
 * Turns a data-plane `path` parameter (docs/api.md "Workdir files": Workdir-relative with a
 * leading `/`, `/` = the Workdir root) into the relative form a WorkspaceFs bound to the
 * Workdir takes (`""` = its root).
 *
 * The value is expected URL-decoded already (the HTTP framework decodes query strings, so
 * `%2e%2e` arrives here as `..`). Refused: `..`, `\`, `://`, NUL, and sandbox runtime paths
 * (`/home/gem/...`: a client mixing up the sandbox view and the Workdir view) → forbidden
 * (403); empty, no leading `/`, `//`, `.` components, names over 255 bytes, paths over 4096
 * bytes → invalid_request (400). One trailing `/` is tolerated (`/dir/` = `/dir`).
 *
 * This is the syntactic gate only; containment is enforced again by the descriptor-relative,
 * no-follow resolution of every operation.
 */
export function parseDataPlanePath(
  raw: string,
  limits: Pick<WorkspaceLimits, "maxNameBytes" | "maxPathBytes"> = DEFAULT_WORKSPACE_LIMITS,
): string {
  if (raw.length === 0) invalid("empty", "must not be empty: use '/' for the Workdir root");
  if (raw.includes("\u0000")) forbidden("nul");
  if (raw.includes("\\")) forbidden("backslash");
  if (raw.includes("://")) forbidden("url");
  if (isSandboxRuntimePath(raw)) forbidden("runtime_path");
  if (!raw.startsWith("/")) invalid("relative", "must start with '/' (the Workdir root)");
  if (raw === "/") return "";
  const relative = raw.endsWith("/") ? raw.slice(1, -1) : raw.slice(1);
  if (relative.length === 0) invalid("empty_component", "must not contain empty components");
  return splitWorkspacePath(relative, limits).join("/");
}

function forbidden(rule: string): never {
  throw domainError("path_outside_workdir", { details: { field: "path", rule } });
}

function invalid(rule: string, requirement: string): never {
  throw new WorkcellError("invalid_request", `path ${requirement}.`, {
    details: { field: "path", rule },
  });
}
