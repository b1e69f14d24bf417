import { ERROR_CATALOGUE, type ErrorCode } from "./error-catalogue.ts";
import { type ErrorDetails, WorkcellError } from "./workcell-error.ts";

/** The wire shape of every error response (docs/api.md "Conventions"). */
export interface ErrorBody {
  readonly error: {
    readonly code: ErrorCode;
    readonly message: string;
    readonly details?: ErrorDetails;
  };
}

/**
 * Turns anything thrown into the public error body. Only a WorkcellError is trusted to
 * carry a client-facing message. Anything else (a driver error quoting SQL, a TypeError
 * with a stack) becomes `internal` with the catalogue's generic message, and so does a
 * WorkcellError coded `internal`: its message was written for operators, not clients.
 */
export function toErrorBody(err: unknown): ErrorBody {
  if (!(err instanceof WorkcellError) || err.code === "internal") {
    return { error: { code: "internal", message: ERROR_CATALOGUE.internal.message } };
  }
  if (err.details === undefined) {
    return { error: { code: err.code, message: err.message } };
  }
  return { error: { code: err.code, message: err.message, details: err.details } };
}

/** The HTTP status that goes with `toErrorBody(err)`. */
export function httpStatusOfError(err: unknown): number {
  return ERROR_CATALOGUE[toErrorBody(err).error.code].httpStatus;
}
