import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { S3Client } from "@aws-sdk/client-s3";
import { jwtVerify } from "jose";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createLocalServerApp } from "../../../infra/local/console/local-server-app.ts";
import { DEV_TOKEN_AUDIENCE, DEV_TOKEN_ISSUER } from "../../../infra/local/dev-token.ts";

// The local server's own routes (infra/local/console). The API is a stand-in that names
// itself, so the test sees which requests reach it; the real API is covered elsewhere.
const SECRET = "s".repeat(43);
let consoleDir: string;
let app: ReturnType<typeof createLocalServerApp>;
const apiCalls: string[] = [];

beforeAll(async () => {
  consoleDir = await mkdtemp(join(tmpdir(), "workcell-console-dist-"));
  await writeFile(join(consoleDir, "index.html"), '<div id="root"></div>');
  app = createLocalServerApp({
    api: {
      fetch(request) {
        apiCalls.push(new URL(request.url).pathname);
        return Response.json({ api: true });
      },
    },
    consoleDir,
    uploads: {
      awsEndpoint: "http://127.0.0.1:9",
      presigner: new S3Client({
        region: "us-east-1",
        credentials: { accessKeyId: "a", secretAccessKey: "b" },
      }),
      emulator: new S3Client({
        region: "us-east-1",
        credentials: { accessKeyId: "c", secretAccessKey: "d" },
      }),
    },
    devJwtSecret: SECRET,
  });
});
afterAll(() => rm(consoleDir, { recursive: true, force: true }));

const mint = (headers: Record<string, string>, body = JSON.stringify({ uid: "eve" })) =>
  app.request("http://127.0.0.1:8080/local/dev-token", {
    method: "POST",
    headers: { host: "127.0.0.1:8080", "content-type": "application/json", ...headers },
    body,
  });

describe("POST /local/dev-token", () => {
  test.each([
    ["a foreign origin", { origin: "https://evil.example" }],
    ["an opaque origin", { origin: "null" }],
    ["a rebinding host name", { host: "evil.example:8080" }],
    [
      "a rebinding host with a loopback origin",
      { host: "evil.example", origin: "http://127.0.0.1:8080" },
    ],
  ])("refuses %s with 403 and mints nothing", async (_, headers) => {
    const res = await mint(headers);
    expect(res.status).toBe(403);
    const body = (await res.json()) as { error: { code: string }; token?: string };
    expect(body.error.code).toBe("forbidden");
    expect(body.token).toBeUndefined();
  });

  test("refuses a form body (what a cross-site form could send) and a bad uid", async () => {
    const form = await mint({ "content-type": "application/x-www-form-urlencoded" }, "uid=eve");
    expect(form.status).toBe(400);
    expect(((await form.json()) as { token?: string }).token).toBeUndefined();
    const empty = await mint({}, JSON.stringify({ uid: "  " }));
    expect(empty.status).toBe(400);
  });

  test("mints a dev token for a loopback page, admin only when asked", async () => {
    const res = await mint(
      { origin: "http://localhost:5173" },
      JSON.stringify({ uid: "alice", admin: true }),
    );
    expect(res.status).toBe(200);
    const body = (await res.json()) as { token: string; uid: string; admin: boolean };
    const { payload } = await jwtVerify(body.token, new TextEncoder().encode(SECRET), {
      issuer: DEV_TOKEN_ISSUER,
      audience: DEV_TOKEN_AUDIENCE,
    });
    expect(payload.sub).toBe("alice");
    expect(payload.admin).toBe(true);
    const plain = (await (await mint({})).json()) as { token: string };
    const { payload: p2 } = await jwtVerify(plain.token, new TextEncoder().encode(SECRET));
    expect(p2.admin).toBeUndefined();
  });
});

describe("routing", () => {
  test("/v1 and /openapi.json reach the API; deep links get the SPA; config says local", async () => {
    apiCalls.length = 0;
    expect(await (await app.request("/v1/threads")).json()).toEqual({ api: true });
    expect(await (await app.request("/openapi.json")).json()).toEqual({ api: true });
    const deep = await app.request("/threads/abc/files/outputs/a.txt");
    expect(deep.headers.get("content-type")).toContain("text/html");
    expect(await deep.text()).toContain('id="root"');
    expect(await (await app.request("/config.json")).json()).toMatchObject({ mode: "local" });
    expect(apiCalls).toEqual(["/v1/threads", "/openapi.json"]);
  });

  test("a missing asset is not answered with index.html", async () => {
    apiCalls.length = 0;
    const res = await app.request("/assets/missing.js");
    expect(await res.json()).toEqual({ api: true });
    expect(apiCalls).toEqual(["/assets/missing.js"]);
  });

  test("the S3 proxy refuses preflights from foreign origins", async () => {
    const res = await app.request("http://127.0.0.1:8080/local/s3/bucket/key", {
      method: "OPTIONS",
      headers: { host: "127.0.0.1:8080", origin: "https://evil.example" },
    });
    expect(res.status).toBe(403);
    expect(res.headers.get("access-control-allow-origin")).toBeNull();
  });
});
