import { z } from "@hono/zod-openapi";
import { errorBodySchema } from "../../shared/contracts/error-body.ts";

/** Name of the bearer security scheme in the OpenAPI document. */
export const BEARER_SCHEME = "bearer";
export const bearerSecurity = [{ [BEARER_SCHEME]: [] }];

/** `{ description, content }` of an error response, for `responses`. */
export function errorResponse(description: string) {
  return { description, content: { "application/json": { schema: errorBodySchema } } };
}

/** The error responses every authenticated route shares. */
export const commonErrors = {
  401: errorResponse("Missing or invalid token."),
  429: errorResponse(
    "Rate limited (requests_per_minute, open event streams, or too many queued runs); carries Retry-After.",
  ),
  500: errorResponse("Internal error (no internals in the message)."),
  503: errorResponse("A dependency is temporarily unavailable."),
};

/** A UUID path parameter; a malformed one answers 404 like an unknown id (validation-hook.ts). */
export function uuidPathParam(name: string, description: string) {
  return z
    .uuid()
    .openapi({ param: { name, in: "path" } })
    .describe(`${description}; a malformed id answers 404 like an unknown one.`);
}

export const projectIdParams = z.object({ id: uuidPathParam("id", "Project id") });
export const threadIdParams = z.object({ thread_id: uuidPathParam("thread_id", "Thread id") });
export const runIdParams = z.object({ run_id: uuidPathParam("run_id", "Run id") });
