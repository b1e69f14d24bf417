import type { Env, MiddlewareHandler } from "hono";
import { bodyLimit } from "hono/body-limit";
import { WorkcellError } from "../errors/workcell-error.ts";

/**
 * Refuses a body over `maxBytes` with 413 before it is parsed: by Content-Length when
 * given, else while reading (a chunked body cannot sneak past). For bodies parsed in
 * memory (JSON, multipart); a streamed upload bounds its bytes as it writes them.
 * `what` names the body in the message ("batch", "import request").
 */
export function limitBody<E extends Env>(
  maxBytes: number,
  what = "request body",
): MiddlewareHandler<E> {
  const refuse = (): never => {
    throw new WorkcellError(
      "payload_too_large",
      `The ${what} is larger than ${maxBytes} bytes: send less at once.`,
      { details: { max_bytes: maxBytes } },
    );
  };
  const whileReading = bodyLimit({ maxSize: maxBytes, onError: refuse });
  return async function limitBodyMiddleware(c, next) {
    // Hono's bodyLimit first reads `c.req.raw.body`, which on @hono/node-server builds the
    // whole web Request and its ReadableStream, so the route's c.req.json() then reads
    // through web streams instead of the server's direct buffer (≈ a tenth of a request's
    // CPU on POST /v1/threads/{id}/runs, docs/decisions/0087). A declared length is
    // decided here the same way without touching the body: Node's parser never hands the
    // app more bytes than Content-Length says. Chunked or undeclared bodies are counted
    // while reading, by Hono's middleware.
    const method = c.req.method;
    if (method === "GET" || method === "HEAD") return next();
    const length = c.req.header("content-length");
    if (length !== undefined && c.req.header("transfer-encoding") === undefined) {
      if (Number.parseInt(length, 10) > maxBytes) refuse();
      return next();
    }
    return whileReading(c, next);
  };
}
