import type { Hono } from "hono";
import { requireOp } from "../capability-auth.ts";
import type { DataPlaneEnv } from "../data-plane-env.ts";
import { createdJson } from "../entry-json.ts";
import { parentOf, queryPath } from "../query-path.ts";
import { writeUnderQuota } from "../quota-guard.ts";
import { withWorkdir } from "../workdir-opener.ts";
import type { RouteDeps } from "./route-deps.ts";

/**
 * `POST /dp/v1/dirs?path=/dir`: 201, a new 0700 directory. Exists (any kind, even a dangling
 * symlink, which mkdirat never follows): 409; parent missing or a file: 404; parent a
 * symlink: 403.
 */
export function registerDirsRoute(app: Hono<DataPlaneEnv>, deps: RouteDeps): void {
  app.post("/dp/v1/dirs", async (c) => {
    const claims = requireOp(c, "write");
    const path = queryPath(c);
    const signal = c.req.raw.signal;
    const made = await writeUnderQuota(deps.quota, claims, 0, signal, {
      incoming: { bytes: 0, inodes: 1 },
      write: () =>
        withWorkdir(deps.userWorkspaces, claims, { create: true, signal }, (fs) =>
          fs.mkdir(path, { signal }),
        ),
      added: () => ({ bytes: 0, inodes: 1 }),
    });
    return c.json(createdJson(parentOf(path), made), 201);
  });
}
