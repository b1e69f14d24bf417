import {
  existsSync,
  lstatSync,
  mkdirSync,
  readFileSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { namesIn } from "../workspace/harness.ts";
import { type DataPlaneEnv, errorOf, q, SANDBOX_OWNER, setupDataPlane } from "./harness.ts";

// docs/api.md "Workdir files", writing a file and creating a directory: success and failure,
// through real HTTP against real files. afterEach checks that nothing outside Alice's
// Workdir changed.

describe("Workdir files: write", () => {
  let env: DataPlaneEnv;
  beforeEach(async () => {
    env = await setupDataPlane();
  });
  afterEach(() => env.finish());

  describe("PUT /dp/v1/files/content", () => {
    it("creates a file 0600 owned by the sandbox user: 201 with its entry", async () => {
      const response = await env.request("PUT", `/dp/v1/files/content?${q("/new.txt")}`, {
        body: "hello",
      });
      expect(response.status).toBe(201);
      expect(await response.json()).toEqual({
        name: "new.txt",
        path: "/new.txt",
        type: "file",
        size: 5,
        mtime: expect.any(String),
      });
      expect(readFileSync(env.at("new.txt"), "utf8")).toBe("hello");
      const st = lstatSync(env.at("new.txt"));
      expect(st.mode & 0o777).toBe(0o600);
      expect([st.uid, st.gid]).toEqual([SANDBOX_OWNER.uid, SANDBOX_OWNER.gid]);
      expect(namesIn(env.workdir)).toEqual(["new.txt"]);
    });

    it("writes into a subdirectory and accepts an empty body", async () => {
      mkdirSync(env.at("sub"));
      const response = await env.request("PUT", `/dp/v1/files/content?${q("/sub/empty")}`);
      expect(response.status).toBe(201);
      expect((await response.json()) as object).toMatchObject({ path: "/sub/empty", size: 0 });
      expect(readFileSync(env.at("sub/empty"), "utf8")).toBe("");
    });

    it("an existing name is 409 and untouched: a file, a dir, a dangling symlink, a link to outside", async () => {
      writeFileSync(env.at("file"), "original");
      mkdirSync(env.at("dir"));
      symlinkSync("/nonexistent/target", env.at("dangling"));
      symlinkSync(`${env.outside}/secret.txt`, env.at("link"));
      for (const name of ["file", "dir", "dangling", "link"]) {
        const response = await env.request("PUT", `/dp/v1/files/content?${q(`/${name}`)}`, {
          body: "pwned",
        });
        expect(await errorOf(response), name).toMatchObject({ status: 409, code: "conflict" });
      }
      expect(readFileSync(env.at("file"), "utf8")).toBe("original");
      expect(lstatSync(env.at("dangling")).isSymbolicLink()).toBe(true);
      expect(existsSync("/nonexistent/target")).toBe(false);
      expect(namesIn(env.workdir)).toEqual(["dangling", "dir", "file", "link"]);
    });

    it("a symlinked parent is 403 and nothing lands behind it", async () => {
      symlinkSync(env.outside, env.at("out"));
      const response = await env.request("PUT", `/dp/v1/files/content?${q("/out/new.txt")}`, {
        body: "pwned",
      });
      expect(await errorOf(response)).toMatchObject({ status: 403, reason: "symlink_refused" });
      expect(existsSync(`${env.outside}/new.txt`)).toBe(false);
    });

    it("a missing parent or a parent that is a file is 404", async () => {
      writeFileSync(env.at("file"), "x");
      for (const path of ["/missing/a.txt", "/file/a.txt"]) {
        const response = await env.request("PUT", `/dp/v1/files/content?${q(path)}`, { body: "x" });
        expect((await errorOf(response)).status, path).toBe(404);
      }
      expect(namesIn(env.workdir)).toEqual(["file"]);
    });

    it("the root is 400", async () => {
      const response = await env.request("PUT", `/dp/v1/files/content?${q("/")}`, { body: "x" });
      expect(response.status).toBe(400);
    });

    it("too large is 413 and nothing is kept, by Content-Length and while streaming", async () => {
      await env.cleanup();
      env = await setupDataPlane({ limits: { maxUploadBytes: 1024 } });
      const declared = await env.request("PUT", `/dp/v1/files/content?${q("/big")}`, {
        body: Buffer.alloc(4096, 1),
      });
      expect(await errorOf(declared)).toMatchObject({ status: 413, code: "payload_too_large" });
      const chunked = await env.request("PUT", `/dp/v1/files/content?${q("/big")}`, {
        body: new ReadableStream<Uint8Array>({
          start(controller) {
            for (let i = 0; i < 8; i++) controller.enqueue(new Uint8Array(512));
            controller.close();
          },
        }),
      });
      expect(await errorOf(chunked)).toMatchObject({ status: 413, code: "payload_too_large" });
      expect(namesIn(env.workdir)).toEqual([]);
      const exact = await env.request("PUT", `/dp/v1/files/content?${q("/ok")}`, {
        body: Buffer.alloc(1024, 2),
      });
      expect(exact.status).toBe(201);
    });

    it("writes into a managed Workdir that does not exist yet, creating it 0700", async () => {
      const fresh = "projects/11111111-2222-4333-8444-555555555555";
      const token = await env.token({ workdirPath: fresh, ops: ["write"] });
      const response = await env.request("PUT", `/dp/v1/files/content?${q("/a")}`, {
        token,
        body: "x",
      });
      expect(response.status).toBe(201);
      const dir = `${env.aliceWorkspace}/${fresh}`;
      expect(lstatSync(dir).mode & 0o777).toBe(0o700);
      expect(readFileSync(`${dir}/a`, "utf8")).toBe("x");
    });
  });

  describe("POST /dp/v1/dirs", () => {
    it("creates a 0700 directory: 201", async () => {
      const response = await env.request("POST", `/dp/v1/dirs?${q("/made")}`);
      expect(response.status).toBe(201);
      expect((await response.json()) as object).toMatchObject({
        name: "made",
        path: "/made",
        type: "dir",
        size: 0,
      });
      const st = lstatSync(env.at("made"));
      expect(st.isDirectory()).toBe(true);
      expect(st.mode & 0o777).toBe(0o700);
      expect(st.uid).toBe(SANDBOX_OWNER.uid);
    });

    it("exists (a dir, a file, a dangling symlink, the root) is 409", async () => {
      mkdirSync(env.at("dir"));
      writeFileSync(env.at("file"), "x");
      symlinkSync("/nonexistent", env.at("dangling"));
      for (const path of ["/dir", "/file", "/dangling", "/"]) {
        const response = await env.request("POST", `/dp/v1/dirs?${q(path)}`);
        expect((await errorOf(response)).status, path).toBe(409);
      }
      expect(existsSync("/nonexistent")).toBe(false);
    });

    it("a missing parent is 404, a symlinked parent 403", async () => {
      symlinkSync(env.outside, env.at("out"));
      expect((await env.request("POST", `/dp/v1/dirs?${q("/a/b")}`)).status).toBe(404);
      expect((await env.request("POST", `/dp/v1/dirs?${q("/out/b")}`)).status).toBe(403);
      expect(existsSync(`${env.outside}/b`)).toBe(false);
    });
  });
});
