import { OpenAPIHono } from "@hono/zod-openapi";
import { Hono } from "hono";
import { describe, expect, test } from "vitest";
import {
  openApiPath,
  routeTemplate,
  UNMATCHED_ROUTE,
} from "../../../shared/http/route-template.ts";

describe("routeTemplate", () => {
  test("names the matched handler's template, never the concrete path", async () => {
    const app = new Hono();
    const seen: string[] = [];
    app.use(async (c, next) => {
      await next();
      seen.push(routeTemplate(c));
    });
    app.get("/v1/runs/:run_id", (c) => c.text("ok"));
    app.get("/v1/threads/:thread_id/attachments/:file_id", (c) => c.text("ok"));
    await app.request("/v1/runs/0b9e3c1e-8f1a-4c55-9d5e-5c8f3d0a1b2c");
    await app.request("/v1/threads/t-1/attachments/f-2");
    await app.request("/v1/nothing/here");
    expect(seen).toEqual([
      "/v1/runs/{run_id}",
      "/v1/threads/{thread_id}/attachments/{file_id}",
      UNMATCHED_ROUTE,
    ]);
  });

  test("a request refused by a middleware still names the route it asked for", async () => {
    const app = new OpenAPIHono();
    let seen = "";
    app.use(async (c, next) => {
      await next();
      seen = routeTemplate(c);
    });
    app.use("/v1/*", async (c) => c.text("refused", 401));
    app.post("/v1/runs/:run_id/cancel", (c) => c.text("ok"));
    const res = await app.request("/v1/runs/abc/cancel", { method: "POST" });
    expect(res.status).toBe(401);
    expect(seen).toBe("/v1/runs/{run_id}/cancel");
  });

  test("Hono's parameter forms become OpenAPI's", () => {
    expect(openApiPath("/dp/v1/files/content")).toBe("/dp/v1/files/content");
    expect(openApiPath("/v1/admin/users/:uid/limits")).toBe("/v1/admin/users/{uid}/limits");
    expect(openApiPath("/v1/items/:id{[0-9]+}")).toBe("/v1/items/{id}");
  });
});
