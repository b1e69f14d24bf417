import { z } from "@hono/zod-openapi";
import { WorkcellError } from "../../shared/errors/workcell-error.ts";

/**
 * Position after the last thread of a page: its creation time with the database's full
 * microsecond precision (a JS Date would drop the microseconds and skip or repeat
 * threads created within one millisecond) and its id as the tie-breaker.
 */
export type ThreadCursor = { readonly createdAt: string; readonly threadId: string };

const cursorSchema = z.object({
  t: z.string().regex(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/),
  id: z.uuid(),
});

/** Opaque to clients: base64url of a small JSON object. */
export function encodeThreadCursor(cursor: ThreadCursor): string {
  const json = JSON.stringify({ t: cursor.createdAt, id: cursor.threadId });
  return btoa(json).replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "");
}

export function decodeThreadCursor(raw: string): ThreadCursor {
  try {
    const json = atob(raw.replaceAll("-", "+").replaceAll("_", "/"));
    const parsed = cursorSchema.parse(JSON.parse(json));
    return { createdAt: parsed.t, threadId: parsed.id };
  } catch {
    throw new WorkcellError(
      "invalid_request",
      "The cursor is not one this API issued: pass next_cursor from the previous page unchanged, or omit it.",
      { details: { field: "cursor" } },
    );
  }
}
