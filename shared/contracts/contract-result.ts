import type { z } from "@hono/zod-openapi";
import { WorkcellError } from "../errors/workcell-error.ts";

/** Issues beyond this many are counted, not listed: a garbage body must not make a huge error. */
export const MAX_REPORTED_ISSUES = 20;

/** Parsing outcome as a value: a bad body is an expected outcome, not an exception. */
export type ContractResult<T> =
  | { readonly ok: true; readonly value: T }
  | { readonly ok: false; readonly error: WorkcellError };

export interface ContractIssue {
  /** Dotted path of the offending field, `""` for the body itself. */
  readonly path: string;
  readonly message: string;
}

export function contractIssues(error: z.ZodError): ContractIssue[] {
  return error.issues.slice(0, MAX_REPORTED_ISSUES).map((issue) => ({
    path: issue.path.map(String).join("."),
    message: issue.message,
  }));
}

/** The `invalid_request` error for a body that failed its schema; issues go to `details.issues`. */
export function invalidRequestFromZod(error: z.ZodError, what = "request body"): WorkcellError {
  const issues = contractIssues(error);
  const first = issues[0];
  const where = first === undefined || first.path === "" ? "" : `${first.path}: `;
  const more =
    error.issues.length > 1 ? ` (and ${error.issues.length - 1} more, see details.issues)` : "";
  return new WorkcellError(
    "invalid_request",
    `The ${what} is invalid: ${where}${first?.message ?? "unknown problem"}${more}.`,
    { details: { issues, issue_count: error.issues.length } },
  );
}

export function parseContract<T extends z.ZodType>(
  schema: T,
  input: unknown,
): ContractResult<z.output<T>> {
  const result = schema.safeParse(input);
  return result.success
    ? { ok: true, value: result.data }
    : { ok: false, error: invalidRequestFromZod(result.error) };
}
