import { ERROR_CODES, type ErrorCode } from "../../shared/errors/error-catalogue.ts";
import { WorkcellError } from "../../shared/errors/workcell-error.ts";
import { originHeaders, type RequestOrigin } from "./request-origin.ts";

/**
 * Largest answer read from the data plane. Its biggest is a personal skills listing
 * (well under 1 MiB); anything far larger is not an answer of ours.
 */
export const MAX_DATA_PLANE_RESPONSE_BYTES = 4 * 1024 * 1024;

/** Data-plane 403 reasons that mean our capability was wrong, not the user's request. */
export const CAPABILITY_REFUSALS: ReadonlySet<string> = new Set([
  "operation_not_granted",
  "capability_scope",
]);

export const KEY_PAIR_MISMATCH =
  "The data plane refused the control plane's capability: CAPABILITY_PRIVATE_KEY and the data plane's CAPABILITY_PUBLIC_KEY are not a pair.";

export interface DataPlaneHttpOptions {
  /** DATA_PLANE_URL: the data plane's base URL (may carry a path prefix). */
  readonly baseUrl: string;
  readonly fetch?: typeof fetch;
  readonly maxResponseBytes?: number;
}

export interface DataPlaneRequest {
  /** Absolute path on the data plane, e.g. `/internal/v1/workdirs/check?x=1`. */
  readonly path: string;
  readonly method: "POST" | "DELETE";
  /** The capability minted for exactly this call. */
  readonly token: string;
  /** Sent as JSON when present. */
  readonly body?: unknown;
  /** The caller's signal combined with the call's own deadline (deadlineOf). */
  readonly signal: AbortSignal;
  /** The caller's own signal: when it aborted, its reason is thrown, not ours. */
  readonly callerSignal: AbortSignal;
  /** What the call does, for messages: "to check the directory". */
  readonly purpose: string;
  /** The API request it is made for: its id and trace travel along (decision 0054). */
  readonly origin?: RequestOrigin;
}

export interface DataPlaneAnswer {
  readonly status: number;
  /** The body, read to its end and bounded by `maxResponseBytes`. */
  readonly text: string;
}

export interface DataPlaneHttp {
  request(request: DataPlaneRequest): Promise<DataPlaneAnswer>;
}

/** `signal`, or at the latest `timeoutMs` from now. */
export function deadlineOf(signal: AbortSignal, timeoutMs: number): AbortSignal {
  return AbortSignal.any([signal, AbortSignal.timeout(timeoutMs)]);
}

/**
 * What the control plane's clients of the data plane share: URLs relative to the base
 * (a base with a path prefix keeps it), the capability as a Bearer header, a bounded
 * read of the answer, and one mapping of "no answer" to `unavailable`.
 */
export function createDataPlaneHttp(options: DataPlaneHttpOptions): DataPlaneHttp {
  const fetchImpl = options.fetch ?? fetch;
  const base = options.baseUrl.endsWith("/") ? options.baseUrl : `${options.baseUrl}/`;
  const maxBytes = options.maxResponseBytes ?? MAX_DATA_PLANE_RESPONSE_BYTES;
  return {
    async request(r) {
      const headers: Record<string, string> = {
        ...originHeaders(r.origin),
        Authorization: `Bearer ${r.token}`,
      };
      if (r.body !== undefined) headers["Content-Type"] = "application/json";
      try {
        const response = await fetchImpl(new URL(r.path.slice(1), base).toString(), {
          method: r.method,
          headers,
          ...(r.body === undefined ? {} : { body: JSON.stringify(r.body) }),
          signal: r.signal,
        });
        return { status: response.status, text: await readBounded(response, maxBytes) };
      } catch (cause) {
        // The caller gave up: its reason, not ours. Otherwise the data plane is down, slow
        // (our own deadline), cut the connection, or sent more than any answer of ours.
        r.callerSignal.throwIfAborted();
        if (cause instanceof WorkcellError) throw cause;
        throw new WorkcellError(
          "unavailable",
          r.signal.aborted
            ? `The workspace service did not answer in time ${r.purpose}: retry later.`
            : `The workspace service cannot be reached ${r.purpose}: retry later.`,
          { cause },
        );
      }
    },
  };
}

/** The body as text, refusing more than `maxBytes` (by Content-Length, then as it comes). */
async function readBounded(response: Response, maxBytes: number): Promise<string> {
  const tooLarge = () =>
    new WorkcellError(
      "unavailable",
      `The data plane's answer is larger than ${maxBytes} bytes: it is not an answer of ours.`,
    );
  if (Number(response.headers.get("Content-Length") ?? 0) > maxBytes) {
    await response.body?.cancel().catch(() => {});
    throw tooLarge();
  }
  if (response.body === null) return "";
  const decoder = new TextDecoder();
  let text = "";
  let total = 0;
  for await (const chunk of response.body) {
    total += chunk.byteLength;
    if (total > maxBytes) {
      await response.body.cancel().catch(() => {});
      throw tooLarge();
    }
    text += decoder.decode(chunk, { stream: true });
  }
  return text + decoder.decode();
}

export function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

export interface DataPlaneErrorBody {
  readonly code: ErrorCode;
  readonly message: string;
  readonly details?: Record<string, unknown>;
}

/** The API-shaped error of a data-plane answer, if it is one (a proxy's 502 page is not). */
export function errorBodyOf(text: string): DataPlaneErrorBody | undefined {
  const error = (parseJson(text) as { error?: Partial<DataPlaneErrorBody> } | undefined)?.error;
  if (
    error === undefined ||
    error === null ||
    typeof error.message !== "string" ||
    !(ERROR_CODES as readonly unknown[]).includes(error.code)
  ) {
    return undefined;
  }
  const details =
    typeof error.details === "object" && error.details !== null ? error.details : undefined;
  return { code: error.code as ErrorCode, message: error.message, ...(details ? { details } : {}) };
}

/** `error.details.reason` of an error body, if it has one. */
export function errorReasonOf(body: DataPlaneErrorBody | undefined): string | undefined {
  const reason = body?.details?.reason;
  return typeof reason === "string" ? reason : undefined;
}

/**
 * A non-200 answer of a service route (skills, usage): the agent-host's error rethrown as it
 * was, or ours (internal/unavailable).
 */
export function serviceRefusalOf(path: string, status: number, text: string): WorkcellError {
  const body = errorBodyOf(text);
  const reason = errorReasonOf(body);
  if (status === 401) {
    return new WorkcellError(
      "internal",
      reason === "capability_expired"
        ? "The agent-host found the control plane's service capability expired: the clocks of functions/ and the agent-host disagree."
        : "The agent-host refused the control plane's service capability: CAPABILITY_PRIVATE_KEY and the data plane's CAPABILITY_PUBLIC_KEY are not a pair.",
    );
  }
  if (status === 403) {
    // Every 403 of the service routes is about the capability (its op, its uid, its import):
    // the handlers themselves never answer 403.
    return new WorkcellError(
      "internal",
      `The agent-host refused the service capability for ${path} (${reason ?? "forbidden"}): functions/ minted the wrong scope.`,
    );
  }
  if (status === 404 && body?.code === "not_found") {
    // No such route: an agent-host of an older release, during a rolling deploy.
    return new WorkcellError(
      "unavailable",
      `The agent-host does not serve ${path}: upgrade it to this release.`,
    );
  }
  if (body === undefined || status === 404) {
    return new WorkcellError(
      "unavailable",
      `The agent-host could not serve ${path} (HTTP ${status}): retry later.`,
    );
  }
  return new WorkcellError(body.code, body.message, {
    ...(body.details === undefined ? {} : { details: body.details }),
  });
}
