import type { Hono } from "hono";
import { LOCAL_S3_PROXY_PATH } from "./console-config.ts";
import { loopbackOrigin } from "./loopback-guard.ts";

/** Longest a proxied upload may take before it is abandoned (the browser sees a 504). */
export const S3_PROXY_TIMEOUT_MS = 5 * 60_000;

/** Headers a presigned PUT carries that the emulator needs; everything else stays here. */
const FORWARDED_REQUEST_HEADERS = ["content-type", "content-length", "content-md5"];
const FORWARDED_RESPONSE_HEADERS = ["etag", "content-type", "content-length", "x-amz-request-id"];

function corsHeaders(origin: string | undefined): Record<string, string> {
  if (origin === undefined) return {};
  return {
    "access-control-allow-origin": origin,
    "access-control-allow-methods": "PUT",
    "access-control-allow-headers": "content-type",
    "access-control-expose-headers": "etag",
    vary: "origin",
  };
}

/**
 * `/local/s3/<bucket>/<key>?<presigned query>` → the S3 emulator (fauxqs), local mode only.
 *
 * Why: presigned upload URLs point at S3 and a browser PUTs to them cross-origin, which
 * needs a CORS preflight; fauxqs answers every OPTIONS with 404, so no browser could
 * upload locally. The local Workcell therefore presigns against this same-origin path
 * (local-stack.ts) and this handler forwards the PUT unchanged. It adds no authority: the
 * presigned query still names the one object, and fauxqs would accept the same PUT sent
 * to it directly. Preflights from loopback origins (the Vite dev server) are answered here.
 */
export function registerS3UploadProxy(app: Hono, p: { awsEndpoint: string }): void {
  const target = new URL(p.awsEndpoint);
  app.options(`${LOCAL_S3_PROXY_PATH}/*`, (c) => {
    const origin = loopbackOrigin(c);
    if (origin === undefined) return c.body(null, 403);
    return c.body(null, 204, { ...corsHeaders(origin), "access-control-max-age": "600" });
  });
  app.put(`${LOCAL_S3_PROXY_PATH}/*`, async (c) => {
    const incoming = new URL(c.req.url);
    const url = new URL(incoming.pathname.slice(LOCAL_S3_PROXY_PATH.length), target);
    url.search = incoming.search;
    const headers = new Headers();
    for (const name of FORWARDED_REQUEST_HEADERS) {
      const value = c.req.header(name);
      if (value !== undefined) headers.set(name, value);
    }
    const upstream = await fetch(url, {
      method: "PUT",
      headers,
      body: c.req.raw.body,
      duplex: "half",
      signal: AbortSignal.any([c.req.raw.signal, AbortSignal.timeout(S3_PROXY_TIMEOUT_MS)]),
    } as RequestInit).catch((error: unknown) => {
      const timedOut = error instanceof DOMException && error.name === "TimeoutError";
      return new Response(
        `The local S3 emulator did not take the upload (${timedOut ? "timed out" : String(error)}).`,
        { status: timedOut ? 504 : 502 },
      );
    });
    const out = new Headers(corsHeaders(loopbackOrigin(c)));
    for (const name of FORWARDED_RESPONSE_HEADERS) {
      const value = upstream.headers.get(name);
      if (value !== null) out.set(name, value);
    }
    return new Response(upstream.body, { status: upstream.status, headers: out });
  });
}
