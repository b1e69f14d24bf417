import { assertNever } from "../assert-never.ts";
import type { ErrorCode } from "./error-catalogue.ts";

/**
 * What a queue consumer does with a message whose handler failed with `code`:
 * `retry` leaves it on the queue (it reappears after the visibility timeout, and the
 * queue's redrive policy dead-letters it after its maximum receive count);
 * `dead_letter` moves it aside at once, because delivering it again cannot succeed.
 *
 * Expected outcomes (duplicate delivery, a run already claimed, a lost lease) are
 * result values handled before an error ever reaches this function.
 */
export type QueueDisposition = "retry" | "dead_letter";

export function queueDisposition(code: ErrorCode): QueueDisposition {
  // Exhaustive on purpose: a new catalogue code fails to compile until it is placed.
  switch (code) {
    case "rate_limited":
    case "unavailable":
    case "internal":
      return "retry";
    case "invalid_request":
    case "unprocessable":
    case "unauthenticated":
    case "forbidden":
    case "not_found":
    case "conflict":
    case "payload_too_large":
    case "quota_exceeded":
      return "dead_letter";
    default:
      return assertNever(code, "error code");
  }
}
