import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { BOB, BOB_WORKDIR, type DataPlaneEnv, errorOf, q, setupDataPlane } from "./harness.ts";

// UserWorkspace quotas on the data plane (accounting mode, docs/decisions/0017): the
// capability carries the uid's quota; a write that would pass it is 507 quota_exceeded
// and writes nothing, the existing bytes stay, another uid is unaffected, and a raised
// limit lets the same write through.

let env: DataPlaneEnv;
beforeEach(async () => {
  // Measure every time: the tests write behind the data plane's back, as a sandbox would.
  env = await setupDataPlane({ quotaMaxUsageAgeMs: 0 });
});
afterEach(() => env.finish());

const quota = (bytes: number, inodes = 1000) => ({
  workspace_bytes: bytes,
  workspace_inodes: inodes,
});

function put(path: string, body: string | ReadableStream<Uint8Array>, token: string) {
  return env.request("PUT", `/dp/v1/files/content?${q(path)}`, { body, token });
}

/** A chunked body (no Content-Length): the quota must hold while streaming. */
function chunked(chunks: number, size: number): ReadableStream<Uint8Array> {
  let sent = 0;
  return new ReadableStream({
    pull(controller) {
      if (sent++ === chunks) controller.close();
      else controller.enqueue(new Uint8Array(size).fill(120));
    },
  });
}

/** Every name in the Workdir, temp files included: "nothing written" means none appeared. */
function namesInWorkdir(): string[] {
  return readdirSync(env.workdir).sort();
}

describe("quota on data-plane writes", () => {
  it("a PUT over the quota is 507, writes nothing, keeps what is there; a raised limit lets it in", async () => {
    const small = await env.token({ quota: quota(1000) });
    expect((await put("/a.txt", "x".repeat(600), small)).status).toBe(201);
    const over = await put("/b.txt", "y".repeat(600), small);
    expect(await errorOf(over)).toEqual({
      status: 507,
      code: "quota_exceeded",
      reason: "workspace_quota",
    });
    expect(namesInWorkdir()).toEqual(["a.txt"]);
    expect(readFileSync(env.at("a.txt"), "utf8")).toBe("x".repeat(600));

    const raised = await env.token({ quota: quota(2000) });
    expect((await put("/b.txt", "y".repeat(600), raised)).status).toBe(201);
    expect(readFileSync(env.at("b.txt"), "utf8")).toBe("y".repeat(600));
  });

  it("a PUT refused before its body is read is answered after it: a slow sender sees the 507, not a reset", async () => {
    // Issue 32 (6): the answer left while the client was still sending; the server then
    // closed the socket under it and the client saw "other side closed" instead of 507.
    const small = await env.token({ quota: quota(1000) });
    const chunk = new Uint8Array(64 * 1024).fill(122);
    const chunks = 24;
    let sent = 0;
    // A client on a slow link: the whole body takes longer than the server's own drain
    // allowance after an answer (@hono/node-server: 500 ms), and announces its length.
    const slow = new ReadableStream<Uint8Array>({
      async pull(controller) {
        if (sent++ === chunks) {
          controller.close();
          return;
        }
        await new Promise((r) => setTimeout(r, 60));
        controller.enqueue(chunk);
      },
    });
    const res = await fetch(`${env.server.url}/dp/v1/files/content?${q("/slow.bin")}`, {
      method: "PUT",
      headers: {
        authorization: `Bearer ${small}`,
        "content-length": String(chunk.length * chunks),
      },
      body: slow,
      duplex: "half",
    } as RequestInit);
    const answer = { status: res.status, body: await res.text() };
    expect(answer.status).toBe(507);
    expect(JSON.parse(answer.body)).toMatchObject({ error: { code: "quota_exceeded" } });
    expect(namesInWorkdir()).toEqual([]);
  });

  it("a chunked body stops at the quota while streaming: 507 and no partial file or temp left", async () => {
    const small = await env.token({ quota: quota(4096) });
    const res = await put("/big.bin", chunked(64, 1024), small);
    expect(await errorOf(res)).toMatchObject({ status: 507, code: "quota_exceeded" });
    expect(namesInWorkdir()).toEqual([]);
  });

  it("two concurrent PUTs cannot both take the last free bytes", async () => {
    const small = await env.token({ quota: quota(1000) });
    const results = await Promise.all([
      put("/one.txt", "1".repeat(600), small),
      put("/two.txt", "2".repeat(600), small),
    ]);
    expect(results.map((r) => r.status).sort()).toEqual([201, 507]);
    expect(namesInWorkdir()).toHaveLength(1);
  });

  it("bytes already in the workspace (written by a sandbox) count", async () => {
    writeFileSync(join(env.aliceWorkspace, "made-by-a-run.bin"), Buffer.alloc(900));
    const small = await env.token({ quota: quota(1000) });
    expect((await put("/a.txt", "x".repeat(200), small)).status).toBe(507);
    expect(existsSync(env.at("a.txt"))).toBe(false);
  });

  it("a batch over the quota is 507 and writes none of its files", async () => {
    const small = await env.token({ quota: quota(1000) });
    const form = new FormData();
    form.append("f", new Blob(["a".repeat(400)]), "one.txt");
    form.append("f", new Blob(["b".repeat(700)]), "two.txt");
    const res = await env.request("POST", `/dp/v1/files/batch?${q("/")}`, {
      body: form,
      token: small,
    });
    expect(await errorOf(res)).toMatchObject({ status: 507, code: "quota_exceeded" });
    expect(namesInWorkdir()).toEqual([]);
  });

  it("mkdir past the inode quota is 507 and creates nothing", async () => {
    // The workspace root, projects/ and the Workdir: 3 inodes already.
    const tight = await env.token({ quota: quota(10_000, 4) });
    expect((await env.request("POST", `/dp/v1/dirs?${q("/one")}`, { token: tight })).status).toBe(
      201,
    );
    const res = await env.request("POST", `/dp/v1/dirs?${q("/two")}`, { token: tight });
    expect(await errorOf(res)).toMatchObject({ status: 507, code: "quota_exceeded" });
    expect(namesInWorkdir()).toEqual(["one"]);
  });

  it("another uid over nothing is unaffected by Alice being at her quota", async () => {
    const alice = await env.token({ quota: quota(100) });
    expect((await put("/a.txt", "x".repeat(100), alice)).status).toBe(201);
    expect((await put("/b.txt", "x", alice)).status).toBe(507);
    const bob = await env.token({ uid: BOB, workdirPath: BOB_WORKDIR, quota: quota(10_000) });
    expect((await put("/bob.txt", "x".repeat(1000), bob)).status).toBe(201);
    const bobFile = join(env.bobUserDir, "workspace", BOB_WORKDIR, "bob.txt");
    expect(readFileSync(bobFile, "utf8")).toHaveLength(1000);
    // Bob's file was his own doing: remove it so the harness's "Bob untouched" check holds.
    rmSync(bobFile);
  });
});
