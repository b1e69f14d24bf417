import type { Context, Hono } from "hono";
import { z } from "zod";
import { invalidRequestFromZod } from "../../../shared/contracts/contract-result.ts";
import { WorkcellError } from "../../../shared/errors/index.ts";
import { limitBody } from "../../../shared/http/body-limit.ts";
import { normalizeWorkdirPath } from "../../../shared/paths/normalize-workdir-path.ts";
import { requireOp } from "../capability-auth.ts";
import type { DataPlaneEnv } from "../data-plane-env.ts";
import { withWorkdir } from "../workdir-opener.ts";
import type { RouteDeps } from "./route-deps.ts";

export const WORKDIR_CHECK_PATH = "/internal/v1/workdirs/check";
export const WORKDIR_MATERIALIZE_PATH = "/internal/v1/workdirs/materialize";

/** Body of both internal endpoints. Not strict: fields may grow. */
export const internalWorkdirBodySchema = z.object({
  workdir_path: z.string().describe("The Workdir the capability names (any accepted spelling)."),
});

/**
 * Endpoints functions/ calls server-to-server, with a capability it mints for itself
 * (ops the public `files/access` route never grants, so they are safe on the public port):
 *
 * `POST /internal/v1/workdirs/check` `{workdir_path}` (op `check`, or `read` which implies
 * it): the open-existing check for a linked project. 200 `{ok: true}` for a real directory;
 * 404 missing; 400 a file; 403 a symlink anywhere on the way. Nothing is created.
 *
 * `POST /internal/v1/workdirs/materialize` `{workdir_path}` (op `materialize`): makes the
 * Workdir usable before a run (docs/architecture.md §4.7). A managed `projects/<uuid>` is created
 * (with the UserWorkspace) if missing, idempotently; a linked one must already exist and is
 * checked like `check`. 200 `{ok: true, workdir_path}`.
 *
 * The body repeats the Workdir only as a consistency check: the capability selects it, and
 * a body naming another one is refused (403) rather than silently ignored, because it means
 * the caller and its minter disagree.
 */
export function registerInternalRoutes(app: Hono<DataPlaneEnv>, deps: RouteDeps): void {
  const jsonLimit = limitBody(deps.limits.maxJsonBodyBytes, "request body");

  app.post(WORKDIR_CHECK_PATH, jsonLimit, async (c) => {
    const claims = requireOp(c, "check");
    await requireSameWorkdir(c, claims.workdir_path);
    const signal = c.req.raw.signal;
    await withWorkdir(deps.userWorkspaces, claims, { create: false, signal }, async () => {});
    return c.json({ ok: true }, 200);
  });

  app.post(WORKDIR_MATERIALIZE_PATH, jsonLimit, async (c) => {
    const claims = requireOp(c, "materialize");
    await requireSameWorkdir(c, claims.workdir_path);
    const signal = c.req.raw.signal;
    await withWorkdir(deps.userWorkspaces, claims, { create: true, signal }, async () => {});
    return c.json({ ok: true, workdir_path: claims.workdir_path }, 200);
  });
}

async function requireSameWorkdir(c: Context<DataPlaneEnv>, granted: string): Promise<void> {
  let raw: unknown;
  try {
    raw = await c.req.json();
  } catch (err) {
    if (err instanceof WorkcellError) throw err; // the body limit
    throw new WorkcellError("invalid_request", 'Send a JSON body: {"workdir_path": "..."}.', {
      details: { reason: "malformed_json" },
    });
  }
  const parsed = internalWorkdirBodySchema.safeParse(raw);
  if (!parsed.success) throw invalidRequestFromZod(parsed.error);
  const asked = normalizeWorkdirPath(parsed.data.workdir_path);
  if (asked !== granted) {
    throw new WorkcellError(
      "forbidden",
      "workdir_path is not the Workdir the capability was minted for: mint one for this Workdir.",
      { details: { field: "workdir_path", reason: "capability_scope" } },
    );
  }
}
