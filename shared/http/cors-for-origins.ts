import type { MiddlewareHandler } from "hono";
import { cors } from "hono/cors";

/** The origins a deployment lets browsers call from; `"*"` is any origin. */
export type CorsOrigins = readonly string[] | "*";

export interface CorsForOriginsOptions {
  readonly origins: CorsOrigins;
  /** Methods a preflight allows. */
  readonly allowMethods: readonly string[];
  /** Request headers a preflight allows (Authorization, Content-Type, ...). */
  readonly allowHeaders: readonly string[];
  /** Response headers a page may read (X-Request-Id, Retry-After, ...). */
  readonly exposeHeaders: readonly string[];
  /** How long a browser may cache a preflight answer. */
  readonly maxAgeSeconds: number;
}

/**
 * CORS for a list of origins, answered before authentication (a preflight never carries
 * the token). Hono's `cors` does the header work for an allowed origin; any other origin
 * gets no CORS header at all (Hono alone would still send Allow-Methods/Expose-Headers),
 * and its preflight is answered 204 without them, so the browser refuses the real request
 * and no route or auth check runs for an OPTIONS. Safe with `"*"` too: authorization is a
 * bearer token the page must hold, never a cookie, so credentials are never allowed.
 */
export function corsForOrigins(options: CorsForOriginsOptions): MiddlewareHandler {
  const allowed =
    options.origins === "*" ? () => true : (origin: string) => options.origins.includes(origin);
  const withHeaders = cors({
    origin: (origin) => (allowed(origin) ? origin : null),
    allowMethods: [...options.allowMethods],
    allowHeaders: [...options.allowHeaders],
    exposeHeaders: [...options.exposeHeaders],
    maxAge: options.maxAgeSeconds,
  });
  return async function corsForOriginsMiddleware(c, next) {
    const origin = c.req.header("Origin");
    if (origin !== undefined && allowed(origin)) return withHeaders(c, next);
    if (isPreflight(c.req.method, c.req.header("Access-Control-Request-Method"))) {
      return new Response(null, { status: 204, headers: { Vary: "Origin" } });
    }
    // Caches must not serve an answer made for one origin to another. Set before the
    // route runs, so the answer it builds (c.json, c.body) carries it: Hono's c.header on
    // a finished answer turns @hono/node-server's light Response into a web Response with
    // a body stream, which the server then writes through web streams (docs/decisions/0087).
    // Only an answer that lost it (a route returning its own Response, or setting Vary
    // itself) gets it afterwards.
    c.header("Vary", "Origin", { append: true });
    await next();
    if (!variesByOrigin(c.res.headers.get("Vary"))) c.header("Vary", "Origin", { append: true });
  };
}

function variesByOrigin(vary: string | null): boolean {
  return vary?.split(",").some((name) => name.trim().toLowerCase() === "origin") === true;
}

function isPreflight(method: string, requestMethod: string | undefined): boolean {
  return method === "OPTIONS" && requestMethod !== undefined;
}

/**
 * Parses a comma-separated origin list (`WORKCELL_CORS_ORIGINS`, `DATA_PLANE_CORS_ORIGINS`):
 * `https://app.example.com,http://localhost:5173`, or `*`. Each entry must be a bare origin
 * (scheme, host, optional port; no path), because the browser compares the `Origin` header
 * byte for byte. Returns a message saying what to fix for a bad entry.
 */
export function parseCorsOrigins(
  value: string,
): { ok: true; origins: CorsOrigins } | { ok: false; message: string } {
  const entries = value
    .split(",")
    .map((entry) => entry.trim())
    .filter((entry) => entry.length > 0);
  if (entries.length === 1 && entries[0] === "*") return { ok: true, origins: "*" };
  const origins: string[] = [];
  for (const entry of entries) {
    let url: URL;
    try {
      url = new URL(entry);
    } catch {
      return { ok: false, message: `'${entry}' is not an origin like https://app.example.com` };
    }
    if (
      (url.protocol !== "http:" && url.protocol !== "https:") ||
      url.origin !== entry.replace(/\/$/, "")
    ) {
      return {
        ok: false,
        message: `'${entry}' must be a bare origin (http(s)://host[:port], no path), e.g. ${url.origin}`,
      };
    }
    origins.push(url.origin);
  }
  return { ok: true, origins };
}
