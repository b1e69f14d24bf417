import { mkdirSync, writeFileSync } from "node:fs";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type DataPlaneEnv, errorOf, q, setupDataPlane } from "./harness.ts";

// docs/api.md "Workdir files", reading content (whole, HEAD, Range): success and failure,
// through real HTTP against real files. afterEach checks that nothing outside Alice's
// Workdir changed.

describe("Workdir files: content", () => {
  let env: DataPlaneEnv;
  beforeEach(async () => {
    env = await setupDataPlane();
  });
  afterEach(() => env.finish());

  describe("GET /dp/v1/files/content", () => {
    it("returns the bytes with safe download headers", async () => {
      writeFileSync(env.at("a.html"), "<script>alert(1)</script>");
      const response = await env.request("GET", `/dp/v1/files/content?${q("/a.html")}`);
      expect(response.status).toBe(200);
      expect(await response.text()).toBe("<script>alert(1)</script>");
      expect(response.headers.get("content-type")).toBe("application/octet-stream");
      expect(response.headers.get("x-content-type-options")).toBe("nosniff");
      expect(response.headers.get("content-security-policy")).toContain("sandbox");
      expect(response.headers.get("content-disposition")).toBe(
        "attachment; filename*=UTF-8''a.html",
      );
      expect(response.headers.get("content-length")).toBe("25");
      expect(response.headers.get("accept-ranges")).toBe("bytes");
      expect(response.headers.get("last-modified")).toBeTruthy();
    });

    it("serves an empty file and a unicode name", async () => {
      writeFileSync(env.at("é 1.txt"), "");
      const response = await env.request("GET", `/dp/v1/files/content?${q("/é 1.txt")}`);
      expect(response.status).toBe(200);
      expect(await response.text()).toBe("");
      expect(response.headers.get("content-disposition")).toBe(
        "attachment; filename*=UTF-8''%C3%A9%201.txt",
      );
    });

    it("a directory is 400, missing 404, the root 400", async () => {
      mkdirSync(env.at("dir"));
      const cases = [
        ["/dir", 400],
        ["/missing.txt", 404],
        ["/", 400],
        ["/missing-dir/a.txt", 404],
      ] as const;
      for (const [path, status] of cases) {
        const response = await env.request("GET", `/dp/v1/files/content?${q(path)}`);
        expect((await errorOf(response)).status, path).toBe(status);
      }
    });

    it("HEAD answers the headers without a body", async () => {
      writeFileSync(env.at("a.txt"), "12345");
      const response = await env.request("HEAD", `/dp/v1/files/content?${q("/a.txt")}`);
      expect(response.status).toBe(200);
      expect(response.headers.get("content-length")).toBe("5");
      expect(await response.text()).toBe("");
    });
  });

  describe("Range", () => {
    const DIGITS = "0123456789";
    beforeEach(() => {
      writeFileSync(env.at("d.txt"), DIGITS);
    });
    const get = (range: string, extra: Record<string, string> = {}) =>
      env.request("GET", `/dp/v1/files/content?${q("/d.txt")}`, {
        headers: { Range: range, ...extra },
      });

    it.each([
      ["bytes=0-3", "0123", "bytes 0-3/10"],
      ["bytes=5-", "56789", "bytes 5-9/10"],
      ["bytes=-3", "789", "bytes 7-9/10"],
      ["bytes=8-100", "89", "bytes 8-9/10"],
      ["bytes=-100", DIGITS, "bytes 0-9/10"],
      ["bytes=9-9", "9", "bytes 9-9/10"],
    ])("%s → 206", async (range, bytes, contentRange) => {
      const response = await get(range);
      expect(response.status).toBe(206);
      expect(response.headers.get("content-range")).toBe(contentRange);
      expect(response.headers.get("content-length")).toBe(String(bytes.length));
      expect(await response.text()).toBe(bytes);
    });

    it.each(["bytes=10-", "bytes=10-20", "bytes=-0"])("%s → 416", async (range) => {
      const response = await get(range);
      expect(response.status).toBe(416);
      expect(response.headers.get("content-range")).toBe("bytes */10");
      expect(await errorOf(response)).toMatchObject({ reason: "range_not_satisfiable" });
    });

    it.each([
      "items=0-3",
      "bytes=3-1",
      "bytes=0-1,4-5",
      "bytes=abc",
      "bytes=-",
      `bytes=0-${"9".repeat(400)}`,
    ])("%s is ignored → 200 with the whole file", async (range) => {
      const response = await get(range);
      expect(response.status).toBe(200);
      expect(await response.text()).toBe(DIGITS);
    });

    it("an empty file with a range is 416", async () => {
      writeFileSync(env.at("empty"), "");
      const response = await env.request("GET", `/dp/v1/files/content?${q("/empty")}`, {
        headers: { Range: "bytes=0-" },
      });
      expect(response.status).toBe(416);
    });

    it("If-Range: the current Last-Modified keeps the range, anything else sends it all", async () => {
      const full = await get("bytes=0-0");
      const lastModified = full.headers.get("last-modified") as string;
      await full.text();
      const same = await get("bytes=0-0", { "If-Range": lastModified });
      expect(same.status).toBe(206);
      await same.text();
      const other = await get("bytes=0-0", { "If-Range": "Thu, 01 Jan 1970 00:00:00 GMT" });
      expect(other.status).toBe(200);
      expect(await other.text()).toBe(DIGITS);
    });
  });
});
