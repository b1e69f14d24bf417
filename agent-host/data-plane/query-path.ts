import type { Context } from "hono";
import { domainError, WorkcellError } from "../../shared/errors/index.ts";
import { parseDataPlanePath } from "../workspace/data-plane-path.ts";
import type { DataPlaneEnv } from "./data-plane-env.ts";

/**
 * The `path` query parameter as a Workdir-relative path for the WorkspaceFs bound to the
 * Workdir (`""` = the Workdir root). Hono has already percent-decoded it, so `%2e%2e`
 * arrives as `..` and is refused like `..` (403), as are `\`, `://`, NUL and sandbox
 * runtime paths (`/home/gem/...`). A repeated `path` is ambiguous (which one would a proxy
 * or a log show?) and refused.
 */
export function queryPath(c: Context<DataPlaneEnv>): string {
  const values = c.req.queries("path") ?? [];
  if (values.length !== 1) {
    throw new WorkcellError(
      "invalid_request",
      values.length === 0
        ? "The 'path' query parameter is required: e.g. ?path=/ for the Workdir root."
        : "Give the 'path' query parameter once.",
      { details: { field: "path" } },
    );
  }
  const raw = values[0] as string;
  // docs/api.md: a path with `..` is 403. parseDataPlanePath reports a relative path (no leading
  // '/') as 400 before looking at its components; an escape attempt is answered as one
  // whatever else is wrong with it.
  if (raw.split("/").includes("..")) {
    throw domainError("path_outside_workdir", { details: { field: "path", rule: "dot_dot" } });
  }
  return parseDataPlanePath(raw);
}

/** `/`-prefixed form of a Workdir-relative path, as the API shows paths. */
export function apiPath(relative: string): string {
  return `/${relative}`;
}

/** The directory part of a Workdir-relative path (`""` for a name in the root). */
export function parentOf(path: string): string {
  const slash = path.lastIndexOf("/");
  return slash < 0 ? "" : path.slice(0, slash);
}
