import type { ErrorHandler } from "hono";
import { HTTPException } from "hono/http-exception";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import { httpStatusOfError, toErrorBody, WorkcellError } from "../../shared/errors/index.ts";
import type { DataPlaneEnv } from "./data-plane-env.ts";
import { REQUEST_ID_HEADER } from "./request-context.ts";

/** `WWW-Authenticate` of every 401 (RFC 6750); it never says why the token was refused. */
export const WWW_AUTHENTICATE = 'Bearer realm="workcell-data-plane", error="invalid_token"';

/**
 * The one place where errors become HTTP responses (API.md error shape via toErrorBody).
 * The workspace layer throws WorkcellErrors whose codes already carry the status mapping of
 * API.md (symlink / special file / escape → 403, missing → 404, exists → 409, bad name →
 * 400, too large → 413); anything else is logged in full and answered as a bare `internal`.
 */
export function errorHandler(): ErrorHandler<DataPlaneEnv> {
  return function onError(err, c) {
    const error = normalize(err, c.req.raw.signal.aborted);
    const status = httpStatusOfError(error) as ContentfulStatusCode;
    const log = c.var.logger;
    if (status >= 500) log?.error({ err }, "request failed");
    else log?.info({ code: toErrorBody(error).error.code, reason: reasonOf(error) }, "refused");
    if (c.var.requestId) c.header(REQUEST_ID_HEADER, c.var.requestId);
    if (status === 401) c.header("WWW-Authenticate", WWW_AUTHENTICATE);
    c.header("Cache-Control", "no-store");
    return c.json(toErrorBody(error), status);
  };
}

function normalize(err: unknown, clientGone: boolean): unknown {
  if (err instanceof HTTPException) return fromHttpException(err);
  // The client went away mid-request (upload cancelled, tab closed): nobody reads this
  // answer, and it is not a server fault worth an error log.
  if (clientGone && !(err instanceof WorkcellError)) {
    return new WorkcellError("invalid_request", "The request was aborted by the client.", {
      details: { reason: "client_aborted" },
    });
  }
  return err;
}

function fromHttpException(err: HTTPException): unknown {
  switch (err.status) {
    case 400:
      return new WorkcellError("invalid_request", err.message || undefined);
    case 401:
      return new WorkcellError("unauthenticated");
    case 404:
      return new WorkcellError("not_found");
    case 413:
      return new WorkcellError("payload_too_large");
    default:
      return err;
  }
}

function reasonOf(err: unknown): unknown {
  return err instanceof WorkcellError ? err.details?.reason : undefined;
}
