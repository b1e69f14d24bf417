import type { MiddlewareHandler } from "hono";
import { bodyLimit } from "hono/body-limit";
import { WorkcellError } from "../../shared/errors/workcell-error.ts";
import type { AppEnv } from "../app-env.ts";

/**
 * Refuses bodies over `maxBytes` with 413 before they are parsed: by Content-Length when
 * given, else while reading (a chunked body cannot sneak past the limit).
 */
export function limitBody(maxBytes: number): MiddlewareHandler<AppEnv> {
  return bodyLimit({
    maxSize: maxBytes,
    onError: () => {
      throw new WorkcellError(
        "payload_too_large",
        `The request body is larger than ${maxBytes} bytes: send a smaller body.`,
        { details: { max_bytes: maxBytes } },
      );
    },
  });
}
