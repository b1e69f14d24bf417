import { writeFileSync } from "node:fs";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ALLOWED_ORIGIN, type DataPlaneEnv, errorOf, q, setupDataPlane } from "./harness.ts";

// What the data-plane app does around every endpoint (unknown routes, request ids, CORS),
// through real HTTP. afterEach checks that nothing outside Alice's Workdir changed.

describe("the data-plane app", () => {
  let env: DataPlaneEnv;
  beforeEach(async () => {
    env = await setupDataPlane();
  });
  afterEach(() => env.finish());

  describe("the app", () => {
    it("an unknown route is 404 in the error shape, and every answer has a request id", async () => {
      const response = await env.request("GET", "/dp/v1/nothing-here");
      expect(await errorOf(response)).toMatchObject({ status: 404, code: "not_found" });
      expect(response.headers.get("x-request-id")).toBeTruthy();
    });

    it("answers a CORS preflight without a token, and exposes the range headers", async () => {
      const preflight = (origin: string) =>
        fetch(`${env.server.url}/dp/v1/files/content?${q("/a")}`, {
          method: "OPTIONS",
          headers: {
            Origin: origin,
            "Access-Control-Request-Method": "PUT",
            "Access-Control-Request-Headers": "authorization",
          },
        });
      const response = await preflight(ALLOWED_ORIGIN);
      expect(response.status).toBe(204);
      expect(response.headers.get("access-control-allow-origin")).toBe(ALLOWED_ORIGIN);
      expect(response.headers.get("access-control-allow-headers")?.toLowerCase()).toContain(
        "authorization",
      );
      writeFileSync(env.at("a"), "x");
      const get = await env.request("GET", `/dp/v1/files/content?${q("/a")}`, {
        headers: { Origin: ALLOWED_ORIGIN },
      });
      expect(get.headers.get("access-control-expose-headers")).toContain("Content-Range");

      // Any other origin: no CORS header at all, on the preflight and on the request.
      const refused = await preflight("https://evil.example");
      expect(refused.status).toBe(204);
      const other = await env.request("GET", `/dp/v1/files/content?${q("/a")}`, {
        headers: { Origin: "https://evil.example" },
      });
      expect(other.status).toBe(200);
      for (const res of [refused, other]) {
        const cors = [...res.headers.keys()].filter((k) => k.startsWith("access-control-"));
        expect(cors).toEqual([]);
      }
    });
  });
});
