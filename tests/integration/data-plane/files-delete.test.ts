import { mkdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { namesIn } from "../workspace/harness.ts";
import { type DataPlaneEnv, errorOf, q, SECRET, setupDataPlane } from "./harness.ts";

// docs/api.md "Workdir files", deleting: success and failure, through real HTTP against real
// files. afterEach checks that nothing outside Alice's Workdir changed.

describe("Workdir files: delete", () => {
  let env: DataPlaneEnv;
  beforeEach(async () => {
    env = await setupDataPlane();
  });
  afterEach(() => env.finish());

  describe("DELETE /dp/v1/files", () => {
    it("deletes a file and an empty directory: 204", async () => {
      writeFileSync(env.at("f"), "x");
      mkdirSync(env.at("d"));
      expect((await env.request("DELETE", `/dp/v1/files?${q("/f")}`)).status).toBe(204);
      expect((await env.request("DELETE", `/dp/v1/files?${q("/d")}`)).status).toBe(204);
      expect(namesIn(env.workdir)).toEqual([]);
    });

    it("the Workdir root is 400 and nothing is deleted", async () => {
      writeFileSync(env.at("f"), "x");
      const response = await env.request("DELETE", `/dp/v1/files?${q("/")}`);
      expect(await errorOf(response)).toMatchObject({ status: 400, reason: "workdir_root" });
      expect(namesIn(env.workdir)).toEqual(["f"]);
      const recursive = await env.request("DELETE", `/dp/v1/files?${q("/")}&recursive=true`);
      expect(recursive.status).toBe(400);
      expect(namesIn(env.workdir)).toEqual(["f"]);
    });

    it("a symlink is removed as a link; its target (a file or a dir outside) survives", async () => {
      symlinkSync(`${env.outside}/secret.txt`, env.at("link-file"));
      symlinkSync(env.outside, env.at("link-dir"));
      expect((await env.request("DELETE", `/dp/v1/files?${q("/link-file")}`)).status).toBe(204);
      const dir = await env.request("DELETE", `/dp/v1/files?${q("/link-dir")}&recursive=true`);
      expect(dir.status).toBe(204);
      expect(namesIn(env.workdir)).toEqual([]);
      expect(readFileSync(`${env.outside}/secret.txt`, "utf8")).toBe(SECRET);
    });

    it("a non-empty directory needs recursive=true (409), which never follows links inside", async () => {
      mkdirSync(env.at("tree/sub"), { recursive: true });
      writeFileSync(env.at("tree/sub/f"), "x");
      symlinkSync(env.outside, env.at("tree/out"));
      const plain = await env.request("DELETE", `/dp/v1/files?${q("/tree")}`);
      expect(await errorOf(plain)).toMatchObject({ status: 409, reason: "directory_not_empty" });
      expect(namesIn(env.at("tree"))).toEqual(["out", "sub"]);
      const recursive = await env.request("DELETE", `/dp/v1/files?${q("/tree")}&recursive=true`);
      expect(recursive.status).toBe(204);
      expect(namesIn(env.workdir)).toEqual([]);
    });

    it("missing is 404, a path through a symlink 403", async () => {
      symlinkSync(env.outside, env.at("out"));
      expect((await env.request("DELETE", `/dp/v1/files?${q("/nope")}`)).status).toBe(404);
      const through = await env.request("DELETE", `/dp/v1/files?${q("/out/secret.txt")}`);
      expect(await errorOf(through)).toMatchObject({ status: 403, reason: "symlink_refused" });
    });
  });
});
