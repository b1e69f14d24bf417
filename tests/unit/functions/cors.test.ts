import { Hono } from "hono";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { corsForOrigins, parseCorsOrigins } from "../../../shared/http/cors-for-origins.ts";
import { type UnitApp, unitApp } from "./unit-app.ts";

// CORS of the API (docs/api.md "Conventions"): answered before auth, only for the configured
// origins; every other origin gets no CORS header at all.

const ALLOWED = "https://console.example.com";
const OTHER = "https://evil.example";

let u: UnitApp;
beforeAll(async () => {
  u = await unitApp({ corsOrigins: [ALLOWED, "http://localhost:5173"] });
});
afterAll(() => u.close());

function preflight(origin: string, path = "/v1/threads", method = "POST") {
  return u.app.request(path, {
    method: "OPTIONS",
    headers: {
      Origin: origin,
      "Access-Control-Request-Method": method,
      "Access-Control-Request-Headers": "authorization,content-type,idempotency-key",
    },
  });
}

function corsHeaders(res: Response): string[] {
  return [...res.headers.keys()].filter((k) => k.startsWith("access-control-"));
}

describe("API CORS", () => {
  test("an allowed origin's preflight is answered before auth with the API's headers", async () => {
    const res = await preflight(ALLOWED);
    expect(res.status).toBe(204);
    expect(res.headers.get("access-control-allow-origin")).toBe(ALLOWED);
    const allowHeaders = res.headers.get("access-control-allow-headers")?.toLowerCase() ?? "";
    for (const h of ["authorization", "content-type", "idempotency-key", "last-event-id"]) {
      expect(allowHeaders).toContain(h);
    }
    expect(res.headers.get("access-control-allow-methods")).toContain("DELETE");
    expect(res.headers.get("access-control-allow-credentials")).toBeNull();
    expect(res.headers.get("vary")).toContain("Origin");
  });

  test("a disallowed origin gets no CORS header, on the preflight and on the request", async () => {
    const res = await preflight(OTHER);
    expect(res.status).toBe(204);
    expect(corsHeaders(res)).toEqual([]);
    const get = await u.app.request("/v1/threads", { headers: { Origin: OTHER } });
    expect(get.status).toBe(401);
    expect(corsHeaders(get)).toEqual([]);
    // A near miss is another origin (the browser compares byte for byte).
    expect(corsHeaders(await preflight("https://console.example.com.evil.example"))).toEqual([]);
    expect(corsHeaders(await preflight("http://console.example.com"))).toEqual([]);
  });

  test("errors carry the CORS headers, so a page can read the 401's body", async () => {
    const res = await u.app.request("/v1/threads", { headers: { Origin: ALLOWED } });
    expect(res.status).toBe(401);
    expect(res.headers.get("access-control-allow-origin")).toBe(ALLOWED);
    expect(res.headers.get("access-control-expose-headers")).toContain("X-Request-Id");
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe("unauthenticated");
  });

  test("every answer without an allowed origin varies by Origin once, however the route answered", async () => {
    const app = new Hono();
    app.use(
      corsForOrigins({
        origins: [ALLOWED],
        allowMethods: ["GET"],
        allowHeaders: [],
        exposeHeaders: [],
        maxAgeSeconds: 60,
      }),
    );
    app.get("/json", (c) => c.json({ ok: true }));
    // Its own Response: the header set before the route ran is not on it.
    app.get("/raw", () => new Response("raw", { headers: { "content-type": "text/plain" } }));
    // A route that replaces Vary with its own.
    app.get("/own-vary", (c) => {
      c.header("Vary", "Accept");
      return c.json({ ok: true });
    });
    // As errorHandler does: the refusal is built after the route threw.
    app.onError((_error, c) => c.json({ error: { code: "internal" } }, 500));
    app.get("/fails", () => {
      throw new Error("boom");
    });
    for (const path of ["/json", "/raw", "/own-vary", "/fails"]) {
      for (const headers of [{}, { Origin: OTHER }]) {
        const res = await app.request(path, { headers });
        const vary = (res.headers.get("vary") ?? "").split(",").map((v) => v.trim());
        expect(
          vary.filter((v) => v.toLowerCase() === "origin"),
          `${path} ${JSON.stringify(headers)}`,
        ).toEqual(["Origin"]);
        if (path === "/own-vary") expect(vary).toContain("Accept");
        if (path === "/raw") expect(await res.text()).toBe("raw");
      }
    }
  });

  test("without WORKCELL_CORS_ORIGINS no origin is allowed", async () => {
    const bare = await unitApp();
    try {
      const res = await bare.app.request("/v1/healthz", {
        method: "OPTIONS",
        headers: { Origin: ALLOWED, "Access-Control-Request-Method": "GET" },
      });
      expect(corsHeaders(res)).toEqual([]);
    } finally {
      await bare.close();
    }
  });

  test("WORKCELL_CORS_ORIGINS parsing: bare origins or *, with a message for anything else", () => {
    expect(parseCorsOrigins("https://a.example, http://localhost:5173")).toEqual({
      ok: true,
      origins: ["https://a.example", "http://localhost:5173"],
    });
    expect(parseCorsOrigins("*")).toEqual({ ok: true, origins: "*" });
    expect(parseCorsOrigins("https://a.example/")).toEqual({
      ok: true,
      origins: ["https://a.example"],
    });
    for (const bad of ["https://a.example/app", "a.example", "ftp://a.example", "*,https://b"]) {
      const parsed = parseCorsOrigins(bad);
      expect(parsed.ok, bad).toBe(false);
    }
  });
});
