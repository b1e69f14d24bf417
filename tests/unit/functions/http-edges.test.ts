import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { REQUEST_ID_HEADER } from "../../../functions/middleware/request-context.ts";
import { type UnitApp, unitApp } from "./unit-app.ts";

// What the app decides before touching any dependency: routing, authentication, body
// limits, validation and the error shape (docs/api.md "Conventions").

let u: UnitApp;
let auth: Record<string, string>;

beforeAll(async () => {
  u = await unitApp({ limits: { maxBodyBytes: 1024 } });
  auth = { authorization: `Bearer ${await u.token("alice")}` };
});
afterAll(async () => {
  await u?.close();
});

type ErrorJson = { error: { code: string; message: string; details?: Record<string, unknown> } };

async function error(res: Response): Promise<ErrorJson["error"]> {
  return ((await res.json()) as ErrorJson).error;
}

function post(path: string, body: string | null, headers: Record<string, string> = {}) {
  return u.app.request(path, {
    method: "POST",
    body,
    headers: { ...auth, "content-type": "application/json", ...headers },
  });
}

describe("error shape and status codes", () => {
  test("unknown routes: 404 in the error shape (after auth under /v1)", async () => {
    const res = await u.app.request("/nope");
    expect(res.status).toBe(404);
    expect(await error(res)).toMatchObject({ code: "not_found" });
    expect((await u.app.request("/v1/nope", { headers: auth })).status).toBe(404);
    expect((await u.app.request("/v1/nope")).status).toBe(401);
  });

  test("malformed JSON, a non-JSON content type, a JSON array: 400", async () => {
    expect(await error(await post("/v1/projects", "{"))).toMatchObject({ code: "invalid_request" });
    const text = await post("/v1/projects", "x", { "content-type": "text/plain" });
    expect(text.status).toBe(400);
    expect((await error(text)).details).toEqual({ field: "Content-Type" });
    expect((await post("/v1/projects", "[]")).status).toBe(400);
  });

  test("zod failures list the failing fields", async () => {
    const res = await post(
      "/v1/threads",
      JSON.stringify({ title: 7, project_id: "x", extra: true }),
    );
    expect(res.status).toBe(400);
    const details = (await error(res)).details as { issues: { path: string }[] };
    expect(details.issues.map((i) => i.path).sort()).toEqual(["", "project_id", "title"]);
  });

  test("workdir_path on thread create is 422, even next to other mistakes", async () => {
    const res = await post("/v1/threads", JSON.stringify({ workdir_path: "a", title: 5 }));
    expect(res.status).toBe(422);
    expect(await error(res)).toMatchObject({
      code: "unprocessable",
      details: { reason: "workdir_path_not_allowed" },
    });
    expect((await post("/v1/runs", JSON.stringify({ input: "x", workdir_path: "a" }))).status).toBe(
      422,
    );
  });

  test("bodies over the limit: 413 by Content-Length and while streaming without it", async () => {
    const big = JSON.stringify({ name: "x".repeat(2048) });
    const declared = await post("/v1/projects", big);
    expect(declared.status).toBe(413);
    expect(await error(declared)).toMatchObject({ code: "payload_too_large" });
    const chunks = new TextEncoder().encode(big);
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let i = 0; i < chunks.length; i += 100)
          controller.enqueue(chunks.subarray(i, i + 100));
        controller.close();
      },
    });
    const request = new Request("http://local/v1/projects", {
      method: "POST",
      body: stream,
      headers: { ...auth, "content-type": "application/json", "transfer-encoding": "chunked" },
      duplex: "half",
    } as RequestInit);
    expect((await u.app.request(request)).status).toBe(413);
  });

  test("malformed ids in paths are 404 on every route, before any lookup", async () => {
    for (const [method, path] of [
      ["GET", "/v1/projects/1"],
      ["GET", "/v1/threads/x"],
      ["DELETE", "/v1/threads/x"],
      ["GET", "/v1/runs/x"],
      ["GET", "/v1/runs/x/events"],
      ["GET", "/v1/runs/x/changes"],
      ["POST", "/v1/runs/x/cancel"],
    ] as const) {
      const res = await u.app.request(path, { method, headers: auth });
      expect(res.status, `${method} ${path}`).toBe(404);
    }
  });

  test("admin routes check the admin claim before the body: a non-admin learns nothing from a 400", async () => {
    for (const body of ["{", JSON.stringify({ nonsense: 1 }), JSON.stringify({ slug: "x" })]) {
      const res = await post("/v1/admin/skills", body);
      expect(res.status).toBe(403);
      expect(await error(res)).toMatchObject({
        code: "forbidden",
        details: { reason: "admin_required" },
      });
    }
    const bad = await post("/v1/admin/skills/uploads", JSON.stringify({ size: -1 }));
    expect(bad.status).toBe(403);
  });

  test("a malformed Idempotency-Key is 400", async () => {
    const res = await post("/v1/projects", "{}", { "idempotency-key": "has spaces" });
    expect(res.status).toBe(400);
  });

  test("unexpected errors are 500 with the generic message; details stay in the log", async () => {
    // A fresh app: routes can only be added before its first request.
    const fresh = await unitApp();
    fresh.app.get("/boom", () => {
      throw new Error("select * from secrets where password = 'hunter2'");
    });
    const res = await fresh.app.request("/boom");
    await fresh.close();
    expect(res.status).toBe(500);
    const text = await res.text();
    expect(text).not.toMatch(/select|hunter2|Error|at /);
    expect(JSON.parse(text)).toEqual({ error: { code: "internal", message: expect.any(String) } });
  });

  test("an unreachable database surfaces as 503 database_unavailable without internals (decision 0160)", async () => {
    const res = await u.app.request("/v1/projects", { headers: auth });
    expect(res.status).toBe(503);
    const text = await res.text();
    expect(text).not.toMatch(/ECONNREFUSED|127\.0\.0\.1|postgres/i);
    expect(JSON.parse(text).error).toMatchObject({
      code: "unavailable",
      details: { reason: "database_unavailable" },
    });
  });
});

describe("request ids", () => {
  test("a safe incoming id is echoed; an unsafe one is replaced", async () => {
    const echoed = await u.app.request("/openapi.json", {
      headers: { [REQUEST_ID_HEADER]: "abc-123" },
    });
    expect(echoed.headers.get(REQUEST_ID_HEADER)).toBe("abc-123");
    const replaced = await u.app.request("/openapi.json", {
      headers: { [REQUEST_ID_HEADER]: "bad id\twith\ttabs" },
    });
    expect(replaced.headers.get(REQUEST_ID_HEADER)).toMatch(/^[0-9a-f-]{36}$/);
    const onError = await u.app.request("/v1/projects");
    expect(onError.headers.get(REQUEST_ID_HEADER)).toMatch(/^[0-9a-f-]{36}$/);
  });
});
