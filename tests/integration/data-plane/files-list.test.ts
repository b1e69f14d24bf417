import { existsSync, mkdirSync, symlinkSync, writeFileSync } from "node:fs";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type DataPlaneEnv, errorOf, q, setupDataPlane } from "./harness.ts";

// docs/api.md "Workdir files", listing: success and failure, through real HTTP against real
// files. afterEach checks that nothing outside Alice's Workdir changed.

describe("Workdir files: list", () => {
  let env: DataPlaneEnv;
  beforeEach(async () => {
    env = await setupDataPlane();
  });
  afterEach(() => env.finish());

  describe("GET /dp/v1/files (list)", () => {
    it("lists regular files and real directories, sorted, dirs with size 0", async () => {
      writeFileSync(env.at("b.txt"), "hello");
      mkdirSync(env.at("a-dir"));
      const response = await env.request("GET", `/dp/v1/files?${q("/")}`);
      expect(response.status).toBe(200);
      const body = (await response.json()) as {
        items: Record<string, unknown>[];
        truncated: boolean;
      };
      expect(body.truncated).toBe(false);
      expect(body.items).toEqual([
        { name: "a-dir", type: "dir", size: 0, mtime: expect.any(String) },
        { name: "b.txt", type: "file", size: 5, mtime: expect.any(String) },
      ]);
      const mtime = body.items[1]?.mtime as string;
      expect(new Date(mtime).toISOString()).toBe(mtime);
    });

    it("lists a subdirectory, with or without a trailing slash", async () => {
      mkdirSync(env.at("dir"));
      writeFileSync(env.at("dir/x"), "1");
      for (const path of ["/dir", "/dir/"]) {
        const body = (await (await env.request("GET", `/dp/v1/files?${q(path)}`)).json()) as {
          items: { name: string }[];
        };
        expect(body.items.map((i) => i.name)).toEqual(["x"]);
      }
    });

    it("hides symlinks, FIFOs and sockets", async () => {
      writeFileSync(env.at("real"), "x");
      symlinkSync(env.outside, env.at("link-dir"));
      symlinkSync(`${env.outside}/secret.txt`, env.at("link-file"));
      const body = (await (await env.request("GET", `/dp/v1/files?${q("/")}`)).json()) as {
        items: { name: string }[];
      };
      expect(body.items.map((i) => i.name)).toEqual(["real"]);
    });

    it("a file is 400, missing is 404, a symlinked dir is 403", async () => {
      writeFileSync(env.at("f"), "x");
      symlinkSync(env.outside, env.at("link"));
      expect(await errorOf(await env.request("GET", `/dp/v1/files?${q("/f")}`))).toMatchObject({
        status: 400,
        code: "invalid_request",
      });
      expect(await errorOf(await env.request("GET", `/dp/v1/files?${q("/nope")}`))).toMatchObject({
        status: 404,
        code: "not_found",
      });
      expect(await errorOf(await env.request("GET", `/dp/v1/files?${q("/link")}`))).toMatchObject({
        status: 403,
        code: "forbidden",
        reason: "symlink_refused",
      });
    });

    it("a missing or repeated path parameter is 400", async () => {
      expect((await env.request("GET", "/dp/v1/files")).status).toBe(400);
      expect((await env.request("GET", "/dp/v1/files?path=/&path=/x")).status).toBe(400);
      expect((await env.request("GET", "/dp/v1/files?path=")).status).toBe(400);
      expect((await env.request("GET", "/dp/v1/files?path=relative")).status).toBe(400);
    });

    it("the root of a managed Workdir not created yet lists empty, and is not created", async () => {
      const fresh = "projects/11111111-2222-4333-8444-555555555555";
      const token = await env.token({ workdirPath: fresh, ops: ["read"] });
      const response = await env.request("GET", `/dp/v1/files?${q("/")}`, { token });
      expect(response.status).toBe(200);
      expect(await response.json()).toEqual({ items: [], truncated: false });
      expect(existsSync(`${env.aliceWorkspace}/${fresh}`)).toBe(false);
      const sub = await env.request("GET", `/dp/v1/files?${q("/dir")}`, { token });
      expect(sub.status).toBe(404);
    });

    it("bounds a listing and says it was truncated", async () => {
      await env.cleanup();
      env = await setupDataPlane({ limits: { maxListEntries: 3 } });
      for (let i = 0; i < 10; i++) writeFileSync(env.at(`f${i}`), "x");
      const body = (await (await env.request("GET", `/dp/v1/files?${q("/")}`)).json()) as {
        items: unknown[];
        truncated: boolean;
      };
      expect(body.items.length).toBeLessThanOrEqual(3);
      expect(body.truncated).toBe(true);
    });
  });
});
