import type { Hono } from "hono";
import { requireOp } from "../capability-auth.ts";
import type { DataPlaneEnv } from "../data-plane-env.ts";
import { queryPath } from "../query-path.ts";
import { withWorkdir } from "../workdir-opener.ts";
import type { RouteDeps } from "./route-deps.ts";

/**
 * `DELETE /dp/v1/files?path=/a.txt[&recursive=true]`: 204. The Workdir root: 400. A symlink
 * is removed as a link (unlinkat never follows). A non-empty directory needs
 * `recursive=true` (409 otherwise); a recursive delete refuses, untouched, a tree holding a
 * special file (403) or over the tree bounds (413), and never follows a link inside it.
 */
export function registerDeleteRoute(app: Hono<DataPlaneEnv>, deps: RouteDeps): void {
  app.delete("/dp/v1/files", async (c) => {
    const claims = requireOp(c, "delete");
    const path = queryPath(c);
    const recursive = c.req.query("recursive") === "true";
    const signal = c.req.raw.signal;
    await withWorkdir(deps.userWorkspaces, claims, { create: false, signal }, (fs) =>
      fs.remove(path, { recursive, signal }),
    );
    return c.body(null, 204);
  });
}
