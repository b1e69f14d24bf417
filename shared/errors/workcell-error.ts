import { ERROR_CATALOGUE, type ErrorCode } from "./error-catalogue.ts";

export type ErrorDetails = Readonly<Record<string, unknown>>;

export interface WorkcellErrorOptions {
  /** Sent to the client as `error.details` (except for `internal`): never put secrets here. */
  readonly details?: ErrorDetails;
  /** The underlying error; kept for logs, never sent to the client. */
  readonly cause?: unknown;
}

/**
 * The one error class of Workcell. Its `code` is a catalogue code; HTTP status and retry
 * behaviour are derived from it, never stored separately.
 */
export class WorkcellError extends Error {
  override readonly name: string = "WorkcellError";
  readonly code: ErrorCode;
  readonly details?: ErrorDetails;

  constructor(code: ErrorCode, message?: string, options: WorkcellErrorOptions = {}) {
    super(
      message ?? ERROR_CATALOGUE[code].message,
      options.cause === undefined ? undefined : { cause: options.cause },
    );
    this.code = code;
    if (options.details !== undefined) this.details = options.details;
  }

  get httpStatus(): number {
    return ERROR_CATALOGUE[this.code].httpStatus;
  }

  get retryable(): boolean {
    return ERROR_CATALOGUE[this.code].retryable;
  }
}

export function isWorkcellError(value: unknown): value is WorkcellError {
  return value instanceof WorkcellError;
}
