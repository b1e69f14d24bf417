import type { Context, ErrorHandler } from "hono";
import { HTTPException } from "hono/http-exception";
import { WorkcellError } from "../../shared/errors/index.ts";
import { errorHandler as sharedErrorHandler } from "../../shared/http/error-handler.ts";
import type { DataPlaneEnv } from "./data-plane-env.ts";

/** `WWW-Authenticate` of every 401 (RFC 6750); it never says why the token was refused. */
export const WWW_AUTHENTICATE = 'Bearer realm="workcell-data-plane", error="invalid_token"';

/**
 * The one place where errors become HTTP responses (docs/api.md error shape via toErrorBody).
 * The workspace layer throws WorkcellErrors whose codes already carry the status mapping of
 * docs/api.md (symlink / special file / escape → 403, missing → 404, exists → 409, bad name →
 * 400, too large → 413); anything else is logged in full and answered as a bare `internal`.
 */
export function errorHandler(): ErrorHandler<DataPlaneEnv> {
  return sharedErrorHandler({
    wwwAuthenticate: WWW_AUTHENTICATE,
    mapError: clientAborted,
    headers: { "Cache-Control": "no-store" },
    logRefusalReason: true,
  });
}

function clientAborted(err: unknown, c: Context): WorkcellError | undefined {
  // The client went away mid-request (upload cancelled, tab closed): nobody reads this
  // answer, and it is not a server fault worth an error log.
  if (!c.req.raw.signal.aborted || err instanceof WorkcellError || err instanceof HTTPException) {
    return undefined;
  }
  return new WorkcellError("invalid_request", "The request was aborted by the client.", {
    details: { reason: "client_aborted" },
  });
}
