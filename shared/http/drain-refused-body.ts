import type { MiddlewareHandler } from "hono";

/** A refused upload's body is read and discarded up to this many bytes before answering. */
export const DRAIN_MAX_BYTES = 16 * 1024 * 1024;
/** …and for at most this long. */
export const DRAIN_MAX_MS = 10_000;

/**
 * An upload refused before its body was read (507 over quota, 413 over a limit, 401) is
 * answered after the body has been read and discarded, up to DRAIN_MAX_BYTES and
 * DRAIN_MAX_MS: a client still sending when the answer left, and the socket closed under
 * it, saw "other side closed" instead of the status (issue 32 (6), about one fetch in two).
 * A body larger than that, or one a handler had already started reading, gets the answer
 * with `Connection: close`, so the connection is not reused with bytes left in it.
 */
export function drainRefusedBody(): MiddlewareHandler {
  return async function drainRefusedBodyMiddleware(c, next) {
    await next();
    const body = c.req.raw.body;
    if (c.res.status < 400 || body === null) return;
    if (body.locked || c.req.raw.bodyUsed || !(await drain(body))) {
      c.res.headers.set("connection", "close");
    }
  };
}

/** True when the whole body was read within the bounds. */
async function drain(body: ReadableStream<Uint8Array>): Promise<boolean> {
  const reader = body.getReader();
  const deadline = Date.now() + DRAIN_MAX_MS;
  let read = 0;
  try {
    for (;;) {
      const left = deadline - Date.now();
      if (left <= 0) return false;
      let timer: NodeJS.Timeout | undefined;
      const chunk = await Promise.race([
        reader.read(),
        new Promise<"late">((resolve) => {
          timer = setTimeout(() => resolve("late"), left);
        }),
      ]).finally(() => clearTimeout(timer));
      if (chunk === "late") return false;
      if (chunk.done) return true;
      read += chunk.value.byteLength;
      if (read > DRAIN_MAX_BYTES) return false;
    }
  } catch {
    return false;
  } finally {
    reader.cancel().catch(() => {});
  }
}
