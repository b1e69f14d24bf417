import type { MiddlewareHandler } from "hono";
import { bodyLimit } from "hono/body-limit";
import { WorkcellError } from "../../shared/errors/index.ts";
import type { DataPlaneEnv } from "./data-plane-env.ts";

/**
 * Refuses a body over `maxBytes` with 413 before it is parsed: by Content-Length when
 * given, else while reading (a chunked body cannot sneak past). For bodies that are parsed
 * in memory (JSON, multipart); the streamed PUT bounds its bytes as it writes them.
 */
export function limitBody(maxBytes: number, what: string): MiddlewareHandler<DataPlaneEnv> {
  return bodyLimit({
    maxSize: maxBytes,
    onError: () => {
      throw new WorkcellError(
        "payload_too_large",
        `The ${what} is larger than ${maxBytes} bytes: send less at once.`,
        { details: { limit: maxBytes } },
      );
    },
  });
}
