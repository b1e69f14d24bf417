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
  return bodyLimit({
    maxSize: maxBytes,
    onError: () => {
      throw new WorkcellError(
        "payload_too_large",
        `The ${what} is larger than ${maxBytes} bytes: send less at once.`,
        { details: { max_bytes: maxBytes } },
      );
    },
  });
}
