import type { ErrorHandler } from "hono";
import { HTTPException } from "hono/http-exception";
import { WorkcellError } from "../../shared/errors/index.ts";
import { errorHandler as sharedErrorHandler } from "../../shared/http/error-handler.ts";
import type { AppEnv } from "../app-env.ts";

/**
 * The one place where errors become HTTP responses (docs/api.md error shape). Hono's own
 * HTTPExceptions (malformed JSON, unsupported media type) are mapped to the catalogue
 * code of their status; anything unknown is logged in full and answered as a bare
 * `internal` without internals.
 */
export function errorHandler(): ErrorHandler<AppEnv> {
  return sharedErrorHandler({
    // RFC 6750: a 401 names the scheme, and nothing about why the token was refused.
    wwwAuthenticate: 'Bearer realm="workcell"',
    mapError: unsupportedMediaType,
  });
}

function unsupportedMediaType(err: unknown): WorkcellError | undefined {
  if (!(err instanceof HTTPException) || err.status !== 415) return undefined;
  return new WorkcellError(
    "invalid_request",
    "Send the request body as JSON with 'Content-Type: application/json'.",
    { details: { field: "Content-Type" } },
  );
}
