import { expect } from "vitest";
import type { Thread } from "../../../../shared/contracts/thread.ts";

/** An origin that no entry under test lists in WORKCELL_CORS_ORIGINS. */
export const REFUSED_ORIGIN = "https://evil.example";

function corsHeaders(res: Response): string[] {
  return [...res.headers.keys()].filter((k) => k.startsWith("access-control-"));
}

/**
 * What a browser sees of a deployed entry's CORS (decision 0020), over real HTTP:
 * `allowedOrigin`'s preflight and request get the headers; any other origin's get none,
 * and its preflights run no route (they create and delete nothing, checked through the
 * API). A browser sends an authenticated request only after a successful preflight, so a
 * refused page never gets further than that; the tests in tests/e2e/sdk/sdk-browser.test.ts
 * show it in Chromium.
 */
export async function checkCors(p: { url: string; token: string; allowedOrigin: string }) {
  const auth = { authorization: `Bearer ${p.token}` };
  const preflight = (origin: string, path: string, method: string) =>
    fetch(`${p.url}${path}`, {
      method: "OPTIONS",
      headers: {
        origin,
        "access-control-request-method": method,
        "access-control-request-headers": "authorization,content-type,idempotency-key",
      },
    });
  const threads = async () => {
    const res = await fetch(`${p.url}/v1/threads`, { headers: auth });
    expect(res.status).toBe(200);
    return ((await res.json()) as { items: Thread[] }).items.map((t) => t.thread_id);
  };

  // Allowed: the preflight, then the real request and an error, all with the headers.
  const allowedPreflight = await preflight(p.allowedOrigin, "/v1/threads", "POST");
  expect(allowedPreflight.status).toBe(204);
  expect(allowedPreflight.headers.get("access-control-allow-origin")).toBe(p.allowedOrigin);
  expect(allowedPreflight.headers.get("access-control-allow-methods")).toContain("POST");
  const allowHeaders = allowedPreflight.headers.get("access-control-allow-headers") ?? "";
  expect(allowHeaders.toLowerCase()).toContain("authorization");
  expect(allowHeaders.toLowerCase()).toContain("idempotency-key");
  expect(allowedPreflight.headers.get("access-control-allow-credentials")).toBeNull();

  const created = await fetch(`${p.url}/v1/threads`, {
    method: "POST",
    headers: { ...auth, origin: p.allowedOrigin, "content-type": "application/json" },
    body: JSON.stringify({ title: "cors" }),
  });
  expect(created.status).toBe(201);
  expect(created.headers.get("access-control-allow-origin")).toBe(p.allowedOrigin);
  expect(created.headers.get("access-control-expose-headers")).toContain("X-Request-Id");
  const thread = (await created.json()) as Thread;
  const unauthenticated = await fetch(`${p.url}/v1/threads`, {
    headers: { origin: p.allowedOrigin },
  });
  expect(unauthenticated.status).toBe(401);
  expect(unauthenticated.headers.get("access-control-allow-origin")).toBe(p.allowedOrigin);

  // Refused: no CORS header on any answer, and the preflights change nothing.
  const before = await threads();
  expect(before).toContain(thread.thread_id);
  for (const [path, method] of [
    ["/v1/threads", "POST"],
    [`/v1/threads/${thread.thread_id}`, "DELETE"],
    ["/v1/runs", "POST"],
  ] as const) {
    for (const origin of [REFUSED_ORIGIN, `${p.allowedOrigin}.evil.example`]) {
      const refused = await preflight(origin, path, method);
      expect(refused.status, `${method} ${path} from ${origin}`).toBe(204);
      expect(corsHeaders(refused), `${method} ${path} from ${origin}`).toEqual([]);
      expect(refused.headers.get("vary")).toContain("Origin");
    }
  }
  // A request a browser would send without a preflight (no Authorization: a simple GET)
  // is answered, but without the headers the browser needs to show it to the page.
  const simple = await fetch(`${p.url}/v1/healthz`, { headers: { origin: REFUSED_ORIGIN } });
  expect(simple.status).toBe(200);
  expect(corsHeaders(simple)).toEqual([]);
  const withToken = await fetch(`${p.url}/v1/threads`, {
    headers: { ...auth, origin: REFUSED_ORIGIN },
  });
  expect(corsHeaders(withToken)).toEqual([]);
  expect(await threads()).toEqual(before);
  const still = await fetch(`${p.url}/v1/threads/${thread.thread_id}`, { headers: auth });
  expect(still.status).toBe(200);
}
