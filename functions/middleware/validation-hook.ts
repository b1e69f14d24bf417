import type { z } from "@hono/zod-openapi";
import { invalidRequestFromZod } from "../../shared/contracts/contract-result.ts";
import { firstNulPath } from "../../shared/contracts/nul-free.ts";
import { threadCreateErrorCode } from "../../shared/contracts/thread.ts";
import { domainError } from "../../shared/errors/domain-errors.ts";
import { WorkcellError } from "../../shared/errors/workcell-error.ts";

type ValidationResult<T> = { target: string } & (
  | { success: true; data: T }
  | { success: false; error: z.ZodError }
);

/**
 * The app's default validator hook: a failed parse becomes a WorkcellError for the one
 * onError. A malformed id in the path cannot name any resource, so it answers 404 like an
 * unknown id (docs/api.md lets us pick 404 or 400; we pick 404 everywhere, consistently);
 * bodies, queries and headers answer 400 with the failing fields in `details.issues`.
 */
export function validationHook<T>(result: ValidationResult<T>): undefined {
  if (result.success) {
    rejectNul(result.target, result.data);
    return undefined;
  }
  if (result.target === "param") throw new WorkcellError("not_found");
  throw withRuleDetails(
    invalidRequestFromZod(result.error, describeTarget(result.target)),
    result.error,
  );
}

/**
 * Custom refinements carry machine-readable context in `params` (the Workdir path rules
 * put `field` and `rule` there). Lift those of the first issue into `details`, so a bad
 * path answers with the same `details.rule` whether the schema or the service found it.
 */
function withRuleDetails(error: WorkcellError, zodError: z.ZodError): WorkcellError {
  const first = zodError.issues[0];
  const params = first?.code === "custom" ? first.params : undefined;
  if (params === undefined) return error;
  const lifted: Record<string, unknown> = {};
  for (const key of ["field", "rule", "reason"]) {
    if (typeof params[key] === "string") lifted[key] = params[key];
  }
  return new WorkcellError(error.code, error.message, { details: { ...error.details, ...lifted } });
}

/**
 * For bodies that create a thread (POST /v1/threads, POST /v1/runs): a `workdir_path`
 * field is a well-formed request for something the model forbids, so 422, not 400.
 */
export function threadCreatingBodyHook<T>(result: ValidationResult<T>): undefined {
  if (
    !result.success &&
    result.target === "json" &&
    threadCreateErrorCode(result.error) === "unprocessable"
  ) {
    throw domainError("workdir_path_not_allowed", { details: { field: "workdir_path" } });
  }
  return validationHook(result);
}

/** A NUL anywhere in a valid input (title, name, input, path segment...) is a 400. */
function rejectNul(target: string, data: unknown): void {
  const path = firstNulPath(data);
  if (path === undefined) return;
  throw new WorkcellError(
    "invalid_request",
    `The ${describeTarget(target)} holds a NUL character (at '${path || "(root)"}'): remove it.`,
    { details: { field: path, reason: "nul_character" } },
  );
}

function describeTarget(target: string): string {
  switch (target) {
    case "json":
      return "request body";
    case "query":
      return "query string";
    case "header":
      return "request headers";
    default:
      return "request";
  }
}
