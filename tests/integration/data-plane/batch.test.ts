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
import { multipart } from "./multipart.ts";

// POST /dp/v1/files/batch: all or nothing (docs/architecture.md §5). Every refusal also checks
// that the target directory holds exactly what it held before (no file, no temp file).

let env: DataPlaneEnv;
beforeEach(async () => {
  env = await setupDataPlane();
});
afterEach(() => env.finish());

function post(dir: string, parts: Parameters<typeof multipart>[0]): Promise<Response> {
  const { body, contentType } = multipart(parts);
  return env.request("POST", `/dp/v1/files/batch?${q(dir)}`, {
    body,
    headers: { "Content-Type": contentType },
  });
}

describe("success", () => {
  it("lands every file, 0600, in order: 201 {items}", async () => {
    const response = await post("/", [
      { filename: "a.txt", content: "A" },
      { filename: "b.bin", content: new Uint8Array([0, 1, 2, 255]) },
      { name: "other-field", filename: "ünï cødé.md", content: "# hi" },
    ]);
    expect(response.status).toBe(201);
    const body = (await response.json()) as {
      items: { name: string; path: string; size: number }[];
    };
    expect(body.items.map((i) => [i.name, i.path, i.size])).toEqual([
      ["a.txt", "/a.txt", 1],
      ["b.bin", "/b.bin", 4],
      ["ünï cødé.md", "/ünï cødé.md", 4],
    ]);
    expect(namesIn(env.workdir)).toEqual(["a.txt", "b.bin", "ünï cødé.md"]);
    expect([...readFileSync(env.at("b.bin"))]).toEqual([0, 1, 2, 255]);
    for (const name of namesIn(env.workdir)) {
      const st = lstatSync(env.at(name));
      expect(st.mode & 0o777).toBe(0o600);
      expect(st.uid).toBe(SANDBOX_OWNER.uid);
    }
  });

  it("works with a browser's FormData, into a subdirectory", async () => {
    mkdirSync(env.at("uploads"));
    const form = new FormData();
    form.append("files", new Blob(["one"]), "1.txt");
    form.append("files", new Blob(["two"]), "2.txt");
    const response = await env.request("POST", `/dp/v1/files/batch?${q("/uploads")}`, {
      body: form,
    });
    expect(response.status).toBe(201);
    expect(namesIn(env.at("uploads"))).toEqual(["1.txt", "2.txt"]);
    expect(readFileSync(env.at("uploads/2.txt"), "utf8")).toBe("two");
  });
});

describe("refusals leave the directory as it was", () => {
  beforeEach(() => {
    writeFileSync(env.at("existing.txt"), "original");
  });
  afterEach(() => {
    expect(readFileSync(env.at("existing.txt"), "utf8")).toBe("original");
  });

  it.each([
    ["..", "dot_dot"],
    [".", "dot"],
    ["", "empty_component"],
    ["a/b.txt", "slash"],
    ["a\\b.txt", "backslash"],
    ["x".repeat(256), "name_too_long"],
  ])("a bad name (%j) is 400 (%s) and nothing is written", async (badName, rule) => {
    const response = await post("/", [
      { filename: "good.txt", content: "x" },
      { filename: badName, content: "x" },
    ]);
    expect(response.status).toBe(400);
    const body = (await response.json()) as { error: { details: Record<string, unknown> } };
    expect(body.error.details).toMatchObject({ field: "name", rule, index: 1 });
    expect(namesIn(env.workdir)).toEqual(["existing.txt"]);
  });

  it("a name twice in the batch is 409 and nothing is written", async () => {
    const response = await post("/", [
      { filename: "dup.txt", content: "1" },
      { filename: "other.txt", content: "2" },
      { filename: "dup.txt", content: "3" },
    ]);
    expect(await errorOf(response)).toMatchObject({ status: 409, reason: "duplicate_name" });
    expect(namesIn(env.workdir)).toEqual(["existing.txt"]);
  });

  it("an existing name is 409, the existing file untouched, nothing else written", async () => {
    const response = await post("/", [
      { filename: "new.txt", content: "1" },
      { filename: "existing.txt", content: "pwned" },
    ]);
    expect(await errorOf(response)).toMatchObject({ status: 409, reason: "name_exists" });
    expect(namesIn(env.workdir)).toEqual(["existing.txt"]);
  });

  it("an existing dangling symlink is 409, the link and its target untouched", async () => {
    symlinkSync("/nonexistent-batch-target", env.at("dangling"));
    const response = await post("/", [{ filename: "dangling", content: "pwned" }]);
    expect((await errorOf(response)).status).toBe(409);
    expect(lstatSync(env.at("dangling")).isSymbolicLink()).toBe(true);
    expect(existsSync("/nonexistent-batch-target")).toBe(false);
  });

  it("a text field instead of a file is 400", async () => {
    const response = await post("/", [
      { filename: "a.txt", content: "x" },
      { name: "note", content: "just text" },
    ]);
    expect(await errorOf(response)).toMatchObject({ status: 400, reason: "not_a_file" });
    expect(namesIn(env.workdir)).toEqual(["existing.txt"]);
  });

  it("no parts, not multipart, or malformed multipart is 400", async () => {
    expect((await post("/", [])).status).toBe(400);
    const json = await env.request("POST", `/dp/v1/files/batch?${q("/")}`, {
      body: "{}",
      headers: { "Content-Type": "application/json" },
    });
    expect(json.status).toBe(400);
    const broken = await env.request("POST", `/dp/v1/files/batch?${q("/")}`, {
      body: "--nope\r\ngarbage",
      headers: { "Content-Type": "multipart/form-data; boundary=other" },
    });
    expect(broken.status).toBe(400);
    expect(namesIn(env.workdir)).toEqual(["existing.txt"]);
  });

  it("a missing directory is 404, a file as directory 404, a symlinked directory 403", async () => {
    symlinkSync(env.outside, env.at("out"));
    expect((await post("/missing", [{ filename: "a", content: "x" }])).status).toBe(404);
    expect((await post("/existing.txt", [{ filename: "a", content: "x" }])).status).toBe(404);
    const link = await post("/out", [{ filename: "a", content: "x" }]);
    expect(await errorOf(link)).toMatchObject({ status: 403, reason: "symlink_refused" });
    expect(existsSync(`${env.outside}/a`)).toBe(false);
    expect(namesIn(env.workdir)).toEqual(["existing.txt", "out"]);
  });
});

describe("limits", () => {
  it("too many files is 413, nothing written", async () => {
    await env.cleanup();
    env = await setupDataPlane({ limits: { maxBatchFiles: 2 } });
    const response = await post("/", [
      { filename: "1", content: "x" },
      { filename: "2", content: "x" },
      { filename: "3", content: "x" },
    ]);
    expect((await errorOf(response)).status).toBe(413);
    expect(namesIn(env.workdir)).toEqual([]);
  });

  it("a body over the limit is 413 before parsing, declared or chunked", async () => {
    await env.cleanup();
    env = await setupDataPlane({ limits: { maxBatchBodyBytes: 1024 } });
    const { body, contentType } = multipart([{ filename: "big", content: "x".repeat(4096) }]);
    const declared = await env.request("POST", `/dp/v1/files/batch?${q("/")}`, {
      body,
      headers: { "Content-Type": contentType },
    });
    expect((await errorOf(declared)).status).toBe(413);
    const chunked = await env.request("POST", `/dp/v1/files/batch?${q("/")}`, {
      body: new ReadableStream<Uint8Array>({
        start(controller) {
          for (let i = 0; i < body.byteLength; i += 512) controller.enqueue(body.slice(i, i + 512));
          controller.close();
        },
      }),
      headers: { "Content-Type": contentType },
    });
    expect((await errorOf(chunked)).status).toBe(413);
    expect(namesIn(env.workdir)).toEqual([]);
  });

  it("a failure in the middle of writing (a file over the per-file limit) leaves nothing behind", async () => {
    await env.cleanup();
    env = await setupDataPlane({ limits: { maxUploadBytes: 8 } });
    writeFileSync(env.at("keep"), "k");
    const response = await post("/", [
      { filename: "first", content: "12345678" },
      { filename: "second", content: "1234" },
      { filename: "third", content: "123456789" },
    ]);
    expect((await errorOf(response)).status).toBe(413);
    // No published file, no temp file (.wc-tmp-*) of the batch remains.
    expect(namesIn(env.workdir)).toEqual(["keep"]);
  });
});
