import type { IdempotencyScope } from "./idempotent-transaction.ts";
import { requestHash } from "./request-hash.ts";

/**
 * The scope of a request's Idempotency-Key, or undefined when it sent none (the request is
 * then simply not idempotent). The body's hash ties the key to this exact request, so a
 * retry with another body is refused (409) rather than answered with the first response.
 */
export async function idempotencyScope(request: {
  readonly uid: string;
  readonly key: string | undefined;
  readonly method: string;
  readonly path: string;
  readonly body: unknown;
}): Promise<IdempotencyScope | undefined> {
  const { uid, key, method, path, body } = request;
  if (key === undefined) return undefined;
  return { uid, key, method, path, requestHash: requestHash(body) };
}
