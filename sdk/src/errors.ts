/**
 * One class per error code of the API's catalogue (docs/api.md "Conventions"), each carrying
 * the server's message, so `catch (e) { if (e instanceof NotFoundError) ... }` works and
 * `e.message` says how to fix the problem. Anything the server did not answer (network
 * down, bad gateway page) is a WorkcellConnectionError. An aborted call rejects with the
 * AbortSignal's reason, untouched.
 */
export class WorkcellError extends Error {
  override name = "WorkcellError";
  /** The catalogue code (`not_found`, ...), or `unknown` for a code this SDK predates. */
  readonly code: string;
  /** HTTP status of the answer (0 when there was none). */
  readonly status: number;
  /** `error.details` of the answer: `reason`, `field`, ... */
  readonly details: Record<string, unknown> | undefined;
  /** The server's X-Request-Id, to quote to an operator. */
  readonly requestId: string | undefined;

  constructor(init: {
    code: string;
    status: number;
    message: string;
    details?: Record<string, unknown> | undefined;
    requestId?: string | undefined;
    cause?: unknown;
  }) {
    super(init.message, init.cause === undefined ? undefined : { cause: init.cause });
    this.code = init.code;
    this.status = init.status;
    this.details = init.details;
    this.requestId = init.requestId;
  }

  /** `details.reason` (a stable snake_case name for domain failures), if any. */
  get reason(): string | undefined {
    const reason = this.details?.reason;
    return typeof reason === "string" ? reason : undefined;
  }
}

type ErrorInit = ConstructorParameters<typeof WorkcellError>[0];
type ErrorClass = new (init: ErrorInit) => WorkcellError;

/**
 * A class for one catalogue code: only its name differs from WorkcellError. The name is
 * set explicitly (not taken from the class), so it survives a minifying bundler.
 */
function errorClass(name: string): ErrorClass {
  const Class = class extends WorkcellError {
    override name = name;
  };
  Object.defineProperty(Class, "name", { value: name });
  return Class;
}

/** An error the server says to retry later; `retryAfterSeconds` is its Retry-After, if any. */
class RetryLaterError extends WorkcellError {
  retryAfterSeconds: number | undefined;
}

export const InvalidRequestError = errorClass("InvalidRequestError");
export const UnprocessableError = errorClass("UnprocessableError");
export const UnauthenticatedError = errorClass("UnauthenticatedError");
export const ForbiddenError = errorClass("ForbiddenError");
export const NotFoundError = errorClass("NotFoundError");
export const ConflictError = errorClass("ConflictError");
export const PayloadTooLargeError = errorClass("PayloadTooLargeError");
export const QuotaExceededError = errorClass("QuotaExceededError");
export const InternalError = errorClass("InternalError");
/** No answer from the server (DNS, refused connection, reset, a non-API error page). */
export const WorkcellConnectionError = errorClass("WorkcellConnectionError");
export class RateLimitedError extends RetryLaterError {
  override name = "RateLimitedError";
}
export class UnavailableError extends RetryLaterError {
  override name = "UnavailableError";
}
/** Wire code → class: the catalogue of shared/errors/error-catalogue.ts plus quota_exceeded. */
export const ERROR_CLASSES: Readonly<Record<string, ErrorClass>> = Object.freeze({
  invalid_request: InvalidRequestError,
  unprocessable: UnprocessableError,
  unauthenticated: UnauthenticatedError,
  forbidden: ForbiddenError,
  not_found: NotFoundError,
  conflict: ConflictError,
  payload_too_large: PayloadTooLargeError,
  rate_limited: RateLimitedError,
  quota_exceeded: QuotaExceededError,
  unavailable: UnavailableError,
  internal: InternalError,
});

const STATUS_CODES: Readonly<Record<number, string>> = {
  400: "invalid_request",
  401: "unauthenticated",
  403: "forbidden",
  404: "not_found",
  409: "conflict",
  413: "payload_too_large",
  422: "unprocessable",
  429: "rate_limited",
  500: "internal",
  502: "unavailable",
  503: "unavailable",
  504: "unavailable",
  507: "quota_exceeded",
};

/** The typed error of a non-2xx response (its body already read, or not JSON). */
export function errorFromResponse(response: Response, body: unknown): WorkcellError {
  const wire = isErrorBody(body) ? body.error : undefined;
  const code = wire?.code ?? STATUS_CODES[response.status] ?? "unknown";
  const Class = ERROR_CLASSES[code] ?? WorkcellError;
  const error = new Class({
    code,
    status: response.status,
    message:
      wire?.message ??
      `The server answered ${response.status} ${response.statusText} without an error body: check baseUrl points at a Workcell API.`,
    details: wire?.details,
    requestId: response.headers.get("x-request-id") ?? undefined,
  });
  if (error instanceof RetryLaterError) {
    const retryAfter = Number(response.headers.get("retry-after"));
    error.retryAfterSeconds =
      Number.isFinite(retryAfter) && retryAfter > 0 ? retryAfter : undefined;
  }
  return error;
}

/** Reads a failed response's body (JSON when it is) and returns its typed error. */
export async function readError(response: Response): Promise<WorkcellError> {
  const text = await response.text().catch(() => "");
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  return errorFromResponse(response, body);
}

/** A fetch that failed without an answer, unless it was our own abort. */
export function connectionError(cause: unknown, url: string, signal?: AbortSignal): unknown {
  if (signal?.aborted) return signal.reason;
  if (cause instanceof WorkcellError) return cause;
  if (cause instanceof DOMException && cause.name === "AbortError") return cause;
  return new WorkcellConnectionError({
    code: "connection_failed",
    status: 0,
    message: `Could not reach ${new URL(url).origin}: ${cause instanceof Error ? cause.message : String(cause)}. Check the URL and that the server is running.`,
    cause,
  });
}

type ErrorBody = { error: { code: string; message: string; details?: Record<string, unknown> } };

function isErrorBody(body: unknown): body is ErrorBody {
  if (typeof body !== "object" || body === null || !("error" in body)) return false;
  const error = (body as { error: unknown }).error;
  return (
    typeof error === "object" &&
    error !== null &&
    typeof (error as { code?: unknown }).code === "string" &&
    typeof (error as { message?: unknown }).message === "string"
  );
}
