import { z } from "@hono/zod-openapi";

export const IDEMPOTENCY_KEY_HEADER = "Idempotency-Key";
/** Long enough for a UUID or a hash-based key; a longer one is a client bug. */
export const MAX_IDEMPOTENCY_KEY_CHARS = 255;

/** Headers of a mutating POST (Hono's header validator sees lowercase names). */
export const idempotencyHeadersSchema = z.object({
  "idempotency-key": z
    .string()
    .min(1)
    .max(MAX_IDEMPOTENCY_KEY_CHARS)
    .regex(/^[\x21-\x7e]+$/, "must be printable ASCII without spaces, e.g. a UUID")
    .optional()
    .describe(
      `${IDEMPOTENCY_KEY_HEADER}: the same key with the same body returns the original result; with another body, 409. Keys are per user.`,
    ),
});
