import type { Context, Hono } from "hono";
import { WorkcellError } from "../../../shared/errors/index.ts";
import { decideRange } from "../byte-range.ts";
import { requireOp } from "../capability-auth.ts";
import type { DataPlaneEnv } from "../data-plane-env.ts";
import { createdJson } from "../entry-json.ts";
import { parentOf, queryPath } from "../query-path.ts";
import { writeUnderQuota } from "../quota-guard.ts";
import { openWorkdir, withWorkdir } from "../workdir-opener.ts";
import type { RouteDeps } from "./route-deps.ts";

/**
 * Headers of every file download. The bytes are the user's (or the agent's) and may be
 * HTML or script: they are never sniffed, never rendered inline, and run in a sandboxed
 * origin if a browser shows them anyway, so a file cannot act on the data plane's origin.
 */
const DOWNLOAD_HEADERS = {
  "Content-Type": "application/octet-stream",
  "X-Content-Type-Options": "nosniff",
  "Content-Security-Policy": "default-src 'none'; sandbox",
  "Cache-Control": "private, no-store",
  "Accept-Ranges": "bytes",
} as const;

/**
 * `GET /dp/v1/files/content?path=/a.txt`: the bytes, streamed from the descriptor (never
 * buffered); one `Range` → 206 / 416. A directory: 400; missing: 404; a symlink or special
 * file: 403 (opened O_PATH first, so a FIFO never blocks).
 *
 * `PUT /dp/v1/files/content?path=/a.txt`: the request body streamed into a temp file and
 * published no-clobber: 201. Exists (even as a dangling symlink): 409, untouched; parent a
 * symlink: 403; parent missing or a file: 404; over `maxUploadBytes`: 413 and nothing kept.
 */
export function registerContentRoutes(app: Hono<DataPlaneEnv>, deps: RouteDeps): void {
  app.get("/dp/v1/files/content", (c) => download(c, deps));

  app.put("/dp/v1/files/content", async (c) => {
    const claims = requireOp(c, "write");
    const path = queryPath(c);
    const maxBytes = deps.limits.maxUploadBytes;
    // Early answer from the declared length, before anything is opened or read. Not the
    // bound itself: a chunked body has no length, and writeFile counts the real bytes.
    const declared = Number(c.req.header("Content-Length"));
    if (Number.isFinite(declared) && declared > maxBytes) throw uploadTooLarge(maxBytes);
    const signal = c.req.raw.signal;
    const body = c.req.raw.body ?? new Uint8Array(0);
    const written = await writeUnderQuota(deps.quota, claims, maxBytes, signal, {
      incoming: { bytes: Number.isFinite(declared) ? declared : 0, inodes: 1 },
      write: (bound) =>
        withWorkdir(deps.userWorkspaces, claims, { create: true, signal }, (fs) =>
          fs.writeFile(path, body, { maxBytes: bound, signal }),
        ),
      added: (info) => ({ bytes: info.size, inodes: 1 }),
    });
    deps.bytes.inc({ direction: "in" }, written.size);
    return c.json(createdJson(parentOf(path), written), 201);
  });
}

async function download(c: Context<DataPlaneEnv>, deps: RouteDeps): Promise<Response> {
  const claims = requireOp(c, "read");
  const path = queryPath(c);
  const signal = c.req.raw.signal;
  const fs = await openWorkdir(deps.userWorkspaces, claims, { create: false, signal });
  // The reader holds its own descriptor: the Workdir's can be released at once.
  let reader: Awaited<ReturnType<typeof fs.openRead>>;
  try {
    reader = await fs.openRead(path, { signal });
  } finally {
    fs.close();
  }
  const { size, mtimeMs, name } = reader.info;
  const lastModified = new Date(mtimeMs).toUTCString();
  const headers: Record<string, string> = {
    ...DOWNLOAD_HEADERS,
    "Last-Modified": lastModified,
    "Content-Disposition": `attachment; filename*=UTF-8''${encodeRfc5987(name)}`,
  };
  // If-Range with anything but our current Last-Modified: the client's partial copy is of
  // another version, so it gets the whole file (RFC 9110 §13.1.5).
  const ifRange = c.req.header("If-Range");
  const rangeHeader =
    ifRange === undefined || ifRange === lastModified ? c.req.header("Range") : undefined;
  const decision = decideRange(rangeHeader, size, deps.limits.maxRangeHeaderChars);
  if (decision.kind === "unsatisfiable") {
    reader.close();
    const body = {
      error: {
        code: "invalid_request",
        message: `The requested range starts past the end of the file (${size} bytes): ask for a range inside it.`,
        details: { reason: "range_not_satisfiable", size },
      },
    };
    return c.json(body, 416, { "Content-Range": `bytes */${size}`, "Cache-Control": "no-store" });
  }
  const range = decision.kind === "partial" ? decision.range : { start: 0, end: size - 1 };
  const length = size === 0 ? 0 : range.end - range.start + 1;
  headers["Content-Length"] = String(length);
  if (decision.kind === "partial") {
    headers["Content-Range"] = `bytes ${range.start}-${range.end}/${size}`;
  }
  const status = decision.kind === "partial" ? 206 : 200;
  // HEAD is routed here by Hono, which then drops the body without cancelling it: a stream
  // made now would keep its descriptor open forever.
  if (c.req.raw.method === "HEAD" || length === 0) {
    reader.close();
    return c.body(null, status, headers);
  }
  // Counted as answered (the Content-Length), not as the client read it.
  deps.bytes.inc({ direction: "out" }, length);
  // No request signal here: when the client goes away the server cancels the stream, and
  // the reader closes its descriptor on cancel (an abort error would only add log noise).
  return c.body(reader.stream({ range }), status, headers);
}

function uploadTooLarge(maxBytes: number): WorkcellError {
  return new WorkcellError(
    "payload_too_large",
    `The file is larger than ${maxBytes} bytes: send a smaller file.`,
    { details: { limit: maxBytes, limitName: "maxUploadBytes" } },
  );
}

/** RFC 5987 `ext-value` characters: percent-encode everything else, UTF-8 first. */
function encodeRfc5987(name: string): string {
  return encodeURIComponent(name).replace(
    /['()*]/g,
    (ch) => `%${ch.charCodeAt(0).toString(16).toUpperCase()}`,
  );
}
