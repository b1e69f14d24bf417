import type { S3Client } from "@aws-sdk/client-s3";
import type { Hono } from "hono";
import { drainRefusedBody } from "../../../shared/http/drain-refused-body.ts";
import { LOCAL_S3_PROXY_PATH } from "./console-config.ts";
import { loopbackOrigin } from "./loopback-guard.ts";
import { presignForEmulator, verifyPresignedPut } from "./verify-presigned-put.ts";

/** Longest a proxied upload may take before it is abandoned (the browser sees a 504). */
export const S3_PROXY_TIMEOUT_MS = 5 * 60_000;

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

/** The two sides of the local upload path. */
export type S3UploadProxyDeps = {
  /** fauxqs, where verified uploads go. */
  awsEndpoint: string;
  /** The client upload URLs are presigned with (upload credentials, this path's endpoint). */
  presigner: S3Client;
  /** The server's own client of the emulator (its credentials never leave the server). */
  emulator: S3Client;
  now?: () => Date;
};

/**
 * `/local/s3/<bucket>/<key>?<presigned query>` → the S3 emulator (fauxqs), local mode only.
 *
 * Why: presigned upload URLs point at S3 and a browser PUTs to them cross-origin, which
 * needs a CORS preflight; fauxqs answers every OPTIONS with 404, so no browser could
 * upload locally. The local Workcell therefore presigns against this same-origin path
 * (local-stack.ts), with upload credentials the emulator does not accept. Each PUT is
 * verified here (verify-presigned-put.ts: the signature re-derived for this key, method,
 * content type and size, the expiry checked) and only then forwarded, signed anew with the
 * emulator's credentials: a URL grants exactly what the server presigned, and nothing a
 * user is handed lets them reach the emulator itself (issue 32 (4)). Preflights from
 * loopback origins (the Vite dev server) are answered here.
 */
export function registerS3UploadProxy(app: Hono, p: S3UploadProxyDeps): void {
  const target = new URL(p.awsEndpoint);
  const now = p.now ?? (() => new Date());
  app.options(`${LOCAL_S3_PROXY_PATH}/*`, (c) => {
    const origin = loopbackOrigin(c);
    if (origin === undefined) return c.body(null, 403);
    return c.body(null, 204, { ...corsHeaders(origin), "access-control-max-age": "600" });
  });
  // A refused PUT is answered after its body is read (bounded): the client sees the status.
  app.use(`${LOCAL_S3_PROXY_PATH}/*`, drainRefusedBody());
  app.put(`${LOCAL_S3_PROXY_PATH}/*`, async (c) => {
    const incoming = new URL(c.req.url);
    const grant = await verifyPresignedPut({
      path: incoming.pathname.slice(LOCAL_S3_PROXY_PATH.length),
      query: incoming.searchParams,
      contentType: c.req.header("content-type"),
      contentLength: c.req.header("content-length"),
      presigner: p.presigner,
      now: now(),
    });
    if (!grant.ok) {
      return c.text(
        `Upload refused: ${grant.reason}.`,
        grant.status,
        corsHeaders(loopbackOrigin(c)),
      );
    }
    const signed = new URL(await presignForEmulator(p.emulator, grant, now()));
    const url = new URL(signed.pathname + signed.search, target);
    const headers = new Headers({ "content-length": String(c.req.header("content-length")) });
    if (grant.contentType !== "") headers.set("content-type", grant.contentType);
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
