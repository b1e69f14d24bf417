import { S3Client } from "@aws-sdk/client-s3";
import pino from "pino";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { AttachmentImporter } from "../../../functions/attachments/attachment-importer.ts";
import { registerAttachmentRoutes } from "../../../functions/routes/attachment-routes.ts";
import { createDb } from "../../../shared/db/client.ts";
import { type UnitApp, unitApp } from "../functions/unit-app.ts";

// The attachment routes registered on the whole app, with dependencies that are never
// reached: routing, auth, validation and the OpenAPI document, before any I/O.

const ROUTES = [
  "POST /v1/attachments/uploads",
  "POST /v1/threads/{thread_id}/attachments/confirm",
  "GET /v1/threads/{thread_id}/attachments",
  "DELETE /v1/threads/{thread_id}/attachments/{file_id}",
];

const unreachableImporter: AttachmentImporter = {
  importFiles: async () => {
    throw new Error("the data plane is not available in unit tests");
  },
  removeFiles: async () => {
    throw new Error("the data plane is not available in unit tests");
  },
};

type Doc = {
  paths: Record<string, Record<string, { security?: unknown; responses: Record<string, unknown> }>>;
};

let u: UnitApp;
/** Connects lazily: nothing here reaches it. */
const sql = postgres("postgres://nobody@127.0.0.1:9/none", { max: 1, connect_timeout: 1 });

beforeAll(async () => {
  u = await unitApp();
  registerAttachmentRoutes(u.app, {
    db: createDb(sql),
    logger: pino({ level: "silent" }),
    attachments: {
      s3: new S3Client({
        endpoint: "http://127.0.0.1:9",
        region: "us-east-1",
        credentials: { accessKeyId: "x", secretAccessKey: "x" },
        forcePathStyle: true,
        maxAttempts: 1,
      }),
      bucket: "unit-bucket",
      importer: unreachableImporter,
    },
  });
});
afterAll(async () => {
  await u?.close();
  await sql.end({ timeout: 1 });
});

describe("attachment routes", () => {
  test("are documented with the bearer scheme and their error statuses", async () => {
    const doc = (await (await u.app.request("/openapi.json")).json()) as Doc;
    for (const route of ROUTES) {
      const [method, path] = route.split(" ") as [string, string];
      const op = doc.paths[path]?.[method.toLowerCase()];
      expect(op, route).toBeDefined();
      expect(op?.security, route).toEqual([{ bearer: [] }]);
      expect(op?.responses, route).toHaveProperty("401");
    }
    expect(doc.paths["/v1/attachments/uploads"]?.post?.responses).toHaveProperty("413");
    expect(
      doc.paths["/v1/threads/{thread_id}/attachments/{file_id}"]?.delete?.responses,
    ).toHaveProperty("409");
  });

  test("answer 401 without a token", async () => {
    for (const route of ROUTES) {
      const [method, template] = route.split(" ") as [string, string];
      const path = template.replace(/\{[^}]+\}/g, crypto.randomUUID());
      expect((await u.app.request(path, { method })).status, route).toBe(401);
    }
  });

  test("validate before any I/O: bad bodies 400, oversize 413, malformed ids 404", async () => {
    const auth = {
      authorization: `Bearer ${await u.token("alice")}`,
      "content-type": "application/json",
    };
    const post = (path: string, body: unknown) =>
      u.app.request(path, { method: "POST", headers: auth, body: JSON.stringify(body) });
    expect((await post("/v1/attachments/uploads", { files: [] })).status).toBe(400);
    expect(
      (
        await post("/v1/attachments/uploads", {
          files: [{ name: "a", size: 2 ** 40, content_type: "text/plain" }],
        })
      ).status,
    ).toBe(413);
    expect(
      (
        await post("/v1/attachments/uploads", {
          files: [{ name: "a", size: 1, content_type: "no type" }],
        })
      ).status,
    ).toBe(400);
    const thread = crypto.randomUUID();
    expect(
      (await post(`/v1/threads/${thread}/attachments/confirm`, { group_id: "x", items: [] }))
        .status,
    ).toBe(400);
    expect(
      (await post("/v1/threads/not-a-uuid/attachments/confirm", { group_id: thread, items: [] }))
        .status,
    ).toBe(404);
    const del = await u.app.request(`/v1/threads/${thread}/attachments/nope`, {
      method: "DELETE",
      headers: auth,
    });
    expect(del.status).toBe(404);
  });
});
