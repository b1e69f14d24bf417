import type { ErrorHandler } from "hono";
import { HTTPException } from "hono/http-exception";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import { httpStatusOfError, toErrorBody, WorkcellError } from "../../shared/errors/index.ts";
import type { AppEnv } from "../app-env.ts";
import { REQUEST_ID_HEADER } from "./request-context.ts";

/**
 * The one place where errors become HTTP responses (API.md error shape). Hono's own
 * HTTPExceptions (malformed JSON, unsupported media type) are mapped to the catalogue
 * code of their status; anything unknown is logged in full and answered as a bare
 * `internal` without internals.
 */
export function errorHandler(): ErrorHandler<AppEnv> {
  return function onError(err, c) {
    const error = err instanceof HTTPException ? fromHttpException(err) : err;
    const status = httpStatusOfError(error) as ContentfulStatusCode;
    const log = c.var.logger;
    if (status >= 500) log?.error({ err }, "request failed");
    else log?.info({ code: toErrorBody(error).error.code }, "request refused");
    const requestId = c.var.requestId;
    if (requestId) c.header(REQUEST_ID_HEADER, requestId);
    // RFC 6750: a 401 names the scheme, and nothing about why the token was refused.
    if (status === 401) c.header("WWW-Authenticate", 'Bearer realm="workcell"');
    return c.json(toErrorBody(error), status);
  };
}

function fromHttpException(err: HTTPException): unknown {
  switch (err.status) {
    case 400:
      // Hono's message here is about the body's syntax ("Malformed JSON in request body").
      return new WorkcellError("invalid_request", err.message || undefined);
    case 401:
      return new WorkcellError("unauthenticated");
    case 404:
      return new WorkcellError("not_found");
    case 413:
      return new WorkcellError("payload_too_large");
    case 415:
      return new WorkcellError(
        "invalid_request",
        "Send the request body as JSON with 'Content-Type: application/json'.",
        { details: { field: "Content-Type" } },
      );
    default:
      return err;
  }
}
