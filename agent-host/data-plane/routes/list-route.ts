import type { Hono } from "hono";
import { domainReasonOf } from "../../../shared/errors/index.ts";
import { isManagedWorkdirPath } from "../../../shared/paths/managed-workdir-path.ts";
import { requireOp } from "../capability-auth.ts";
import type { DataPlaneEnv } from "../data-plane-env.ts";
import { entryJson } from "../entry-json.ts";
import { queryPath } from "../query-path.ts";
import { withWorkdir } from "../workdir-opener.ts";
import type { RouteDeps } from "./route-deps.ts";

/**
 * `GET /dp/v1/files?path=/dir`: 200 `{items, truncated}`, regular files and real
 * directories only (symlinks, FIFOs, sockets, devices and in-flight temp files are hidden).
 * A file: 400; missing: 404; a symlink on the way: 403.
 */
export function registerListRoute(app: Hono<DataPlaneEnv>, deps: RouteDeps): void {
  app.get("/dp/v1/files", async (c) => {
    const claims = requireOp(c, "read");
    const path = queryPath(c);
    const signal = c.req.raw.signal;
    try {
      const listed = await withWorkdir(
        deps.userWorkspaces,
        claims,
        { create: false, signal },
        (fs) => fs.list(path, { maxEntries: deps.limits.maxListEntries, signal }),
      );
      return c.json({ items: listed.items.map(entryJson), truncated: listed.truncated });
    } catch (err) {
      // A managed Workdir is created on first write (or by the run that materializes it):
      // until then its root is an empty directory, not an error, and reading must not
      // create it (a read capability never writes).
      if (
        path === "" &&
        isManagedWorkdirPath(claims.workdir_path) &&
        domainReasonOf(err) === "workdir_missing"
      ) {
        return c.json({ items: [], truncated: false });
      }
      throw err;
    }
  });
}
