/**
 * The one table of wire error codes (docs/api.md "Conventions"). Everything that turns an
 * error into an HTTP status, a retry decision or a message reads it from here, so a
 * code cannot mean 409 in one place and 400 in another.
 */

export const ERROR_CODES = [
  "invalid_request",
  "unprocessable",
  "unauthenticated",
  "forbidden",
  "not_found",
  "conflict",
  "payload_too_large",
  "rate_limited",
  "quota_exceeded",
  "unavailable",
  "internal",
] as const;

export type ErrorCode = (typeof ERROR_CODES)[number];

export interface ErrorSpec {
  readonly httpStatus: number;
  /** True when the same request may succeed later without being changed. */
  readonly retryable: boolean;
  /** Shown when the thrower gives no message; says how to fix the problem. */
  readonly message: string;
}

export const ERROR_CATALOGUE: Readonly<Record<ErrorCode, ErrorSpec>> = Object.freeze({
  invalid_request: {
    httpStatus: 400,
    retryable: false,
    message:
      "The request is malformed: check the body, query and path parameters against GET /openapi.json.",
  },
  unprocessable: {
    httpStatus: 422,
    retryable: false,
    message:
      "The request is well-formed but cannot be applied: remove or change the field the message names.",
  },
  unauthenticated: {
    httpStatus: 401,
    retryable: false,
    message:
      "Missing or invalid credentials: send a valid, unexpired token as 'Authorization: Bearer <JWT>'.",
  },
  forbidden: {
    httpStatus: 403,
    retryable: false,
    message:
      "This operation is not allowed: stay inside the Workdir and request a capability that grants it.",
  },
  not_found: {
    httpStatus: 404,
    retryable: false,
    message: "No such resource: check the id, and that it belongs to the calling user.",
  },
  conflict: {
    httpStatus: 409,
    retryable: false,
    message:
      "The request conflicts with the current state: fetch the resource again and pick a different name or key.",
  },
  payload_too_large: {
    httpStatus: 413,
    retryable: false,
    message: "The payload is larger than allowed: split it or send a smaller file.",
  },
  rate_limited: {
    httpStatus: 429,
    retryable: true,
    message: "Too many requests: wait and retry with backoff.",
  },
  quota_exceeded: {
    httpStatus: 507,
    retryable: false,
    message:
      "This would take your workspace over its quota: delete files you no longer need, or ask an administrator to raise your limits.",
  },
  unavailable: {
    httpStatus: 503,
    retryable: true,
    message: "A dependency is temporarily unavailable: retry with backoff.",
  },
  internal: {
    httpStatus: 500,
    // A crash is usually transient (lost connection, restarted node); retrying with
    // backoff is safe because every mutation is idempotent or fenced.
    retryable: true,
    message: "Internal error: retry later; if it persists, report it to the operator.",
  },
});

export function isErrorCode(value: unknown): value is ErrorCode {
  return typeof value === "string" && (ERROR_CODES as readonly string[]).includes(value);
}

export function httpStatusOf(code: ErrorCode): number {
  return ERROR_CATALOGUE[code].httpStatus;
}
