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
import {
  ALLOWED_ORIGIN,
  type DataPlaneEnv,
  errorOf,
  q,
  SANDBOX_OWNER,
  SECRET,
  setupDataPlane,
} from "./harness.ts";

// Every endpoint of API.md "Workdir files", success and failure, through real HTTP against
// real files. afterEach checks that nothing outside Alice's Workdir changed.

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

describe("GET /dp/v1/files/content", () => {
  it("returns the bytes with safe download headers", async () => {
    writeFileSync(env.at("a.html"), "<script>alert(1)</script>");
    const response = await env.request("GET", `/dp/v1/files/content?${q("/a.html")}`);
    expect(response.status).toBe(200);
    expect(await response.text()).toBe("<script>alert(1)</script>");
    expect(response.headers.get("content-type")).toBe("application/octet-stream");
    expect(response.headers.get("x-content-type-options")).toBe("nosniff");
    expect(response.headers.get("content-security-policy")).toContain("sandbox");
    expect(response.headers.get("content-disposition")).toBe("attachment; filename*=UTF-8''a.html");
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
