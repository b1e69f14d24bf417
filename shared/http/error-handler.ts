import type { Context, ErrorHandler } from "hono";
import { HTTPException } from "hono/http-exception";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import { isDatabaseConnectionError } from "../db/transient-database-error.ts";
import { domainError, httpStatusOfError, toErrorBody, WorkcellError } from "../errors/index.ts";
import { safeErrorSerializer } from "../logging/safe-error-serializer.ts";
import { REQUEST_ID_HEADER, type RequestContextEnv } from "./request-context.ts";

export interface ErrorHandlerOptions {
  /** `WWW-Authenticate` of every 401 (RFC 6750): the scheme, never why a token was refused. */
  readonly wwwAuthenticate: string;
  /**
   * What this app answers for an error the shared mapping leaves alone (anything but a
   * Hono HTTPException of status 400, 401, 404 or 413); undefined answers it as thrown.
   */
  readonly mapError?: (err: unknown, c: Context) => unknown;
  /** Headers of every error answer (e.g. `Cache-Control: no-store`); default none. */
  readonly headers?: Readonly<Record<string, string>>;
  /** Whether the request's log line carries a refusal's `details.reason`; default false. */
  readonly logRefusalReason?: boolean;
}

/**
 * The one place where an app's errors become HTTP responses (docs/api.md error shape via
 * toErrorBody): Hono's own HTTPExceptions are mapped to the catalogue code of their status,
 * WorkcellErrors carry their status, and anything unknown is logged in full and answered as
 * a bare `internal` without internals.
 */
export function errorHandler<E extends RequestContextEnv = RequestContextEnv>(
  options: ErrorHandlerOptions,
): ErrorHandler<E> {
  const { wwwAuthenticate, mapError, headers = {}, logRefusalReason = false } = options;
  return function onError(err, c) {
    const error =
      (err instanceof HTTPException ? fromHttpException(err) : undefined) ??
      mapError?.(err, c) ??
      databaseUnavailable(err) ??
      err;
    const status = httpStatusOfError(error) as ContentfulStatusCode;
    const body = toErrorBody(error);
    // A refusal is not logged here: requestContext's one line per request carries its
    // code (and reason). A failure also gets its own line, with the error.
    c.set("errorCode", body.error.code);
    if (logRefusalReason && status < 500) c.set("errorReason", reasonOf(error));
    // Serialized here too, so a logger built without loggerOptions() cannot leak bound SQL values.
    if (status >= 500) c.var.logger?.error({ err: safeErrorSerializer(err) }, "request failed");
    const requestId = c.var.requestId;
    if (requestId) c.header(REQUEST_ID_HEADER, requestId);
    if (status === 401) c.header("WWW-Authenticate", wwwAuthenticate);
    // docs/api.md: a 429 always carries Retry-After (whole seconds, at least 1).
    if (status === 429) c.header("Retry-After", String(retryAfterSecondsOf(error)));
    for (const [name, value] of Object.entries(headers)) c.header(name, value);
    return c.json(body, status);
  };
}

function fromHttpException(err: HTTPException): WorkcellError | undefined {
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
    default:
      return undefined;
  }
}

function retryAfterSecondsOf(err: unknown): number {
  const value = err instanceof WorkcellError ? err.details?.retry_after_seconds : undefined;
  return typeof value === "number" && Number.isFinite(value) ? Math.max(1, Math.ceil(value)) : 1;
}

function reasonOf(err: unknown): unknown {
  return err instanceof WorkcellError ? err.details?.reason : undefined;
}

/**
 * A request whose database connection went away or never came (issue 38): 503
 * `unavailable` saying what is known (it may or may not have been applied) and what to do,
 * not a bare 500. The error itself is still logged in full as a failure.
 */
function databaseUnavailable(err: unknown): WorkcellError | undefined {
  if (err instanceof WorkcellError || !isDatabaseConnectionError(err)) return undefined;
  return domainError("database_unavailable");
}
