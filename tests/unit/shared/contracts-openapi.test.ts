import { createRoute, OpenAPIHono } from "@hono/zod-openapi";
import { describe, expect, test } from "vitest";
import * as contracts from "../../../shared/contracts/index.ts";
import { describedFields } from "./schema-walk.ts";

const requestBodies = {
  projectCreate: contracts.projectCreateRequestSchema,
  threadCreate: contracts.threadCreateRequestSchema,
  threadRunSubmit: contracts.threadRunSubmitRequestSchema,
  runSubmit: contracts.runSubmitRequestSchema,
  runCancel: contracts.runCancelRequestSchema,
  uploads: contracts.uploadsRequestSchema,
  attachmentsConfirm: contracts.attachmentsConfirmRequestSchema,
  filesAccess: contracts.filesAccessRequestSchema,
};

const resources = {
  project: contracts.projectSchema,
  projectList: contracts.projectListSchema,
  thread: contracts.threadSchema,
  threadPage: contracts.threadPageSchema,
  run: contracts.runSchema,
  runSubmitResponse: contracts.runSubmitResponseSchema,
  runEvent: contracts.runEventSchema,
  runChanges: contracts.runChangeListSchema,
  uploadsResponse: contracts.uploadsResponseSchema,
  attachmentList: contracts.attachmentListSchema,
  filesAccessResponse: contracts.filesAccessResponseSchema,
  dataPlaneFiles: contracts.dataPlaneFileListSchema,
  skills: contracts.skillListSchema,
  errorBody: contracts.errorBodySchema,
  healthz: contracts.healthzBodySchema,
  queueMessage: contracts.queueMessageSchema,
  pageQuery: contracts.pageQuerySchema,
};

describe("contracts", () => {
  test("every request body rejects unknown fields", () => {
    for (const [name, schema] of Object.entries(requestBodies)) {
      expect(schema.safeParse({ __unexpected: 1 }).success, name).toBe(false);
    }
  });

  test("every field of every schema has a description", () => {
    for (const [name, schema] of Object.entries({ ...requestBodies, ...resources })) {
      const fields = describedFields(schema);
      if (name !== "runCancel") expect(fields.length, name).toBeGreaterThan(0);
      const missing = fields.filter((f) => !f.described).map((f) => `${name}.${f.path}`);
      expect(missing).toEqual([]);
    }
  });

  test("the schemas generate an OpenAPI document with named components", () => {
    // Registering the routes is enough to document them; no handler is needed.
    const app = new OpenAPIHono();
    for (const [name, schema] of Object.entries(requestBodies)) {
      app.openAPIRegistry.registerPath(
        createRoute({
          method: "post",
          path: `/body/${name}`,
          request: { body: { content: { "application/json": { schema } } } },
          responses: { 204: { description: "ok" } },
        }),
      );
    }
    for (const [name, schema] of Object.entries(resources)) {
      if (name === "pageQuery") continue;
      app.openAPIRegistry.registerPath(
        createRoute({
          method: "get",
          path: `/resource/${name}`,
          request: { query: contracts.pageQuerySchema },
          responses: { 200: { description: "ok", content: { "application/json": { schema } } } },
        }),
      );
    }
    const doc = app.getOpenAPI31Document({ openapi: "3.1.0", info: { title: "t", version: "1" } });
    const components = doc.components?.schemas ?? {};
    for (const name of [
      "Project",
      "Thread",
      "Run",
      "RunEvent",
      "Attachment",
      "ErrorBody",
      "Health",
    ]) {
      expect(components[name], name).toBeDefined();
    }
    const threadCreate = components.ThreadCreateRequest as { additionalProperties?: unknown };
    expect(threadCreate.additionalProperties).toBe(false);
    const parameters = doc.paths?.["/resource/project"]?.get?.parameters as {
      name: string;
      schema: { maximum?: number };
    }[];
    expect(parameters.find((p) => p.name === "limit")?.schema.maximum).toBe(
      contracts.MAX_PAGE_LIMIT,
    );
  });

  test("error body schema accepts what the error catalogue produces and nothing looser", () => {
    expect(
      contracts.errorBodySchema.safeParse({ error: { code: "conflict", message: "x" } }).success,
    ).toBe(true);
    expect(
      contracts.errorBodySchema.safeParse({
        error: { code: "conflict", message: "x", details: { a: 1 } },
      }).success,
    ).toBe(true);
    expect(
      contracts.errorBodySchema.safeParse({ error: { code: "teapot", message: "x" } }).success,
    ).toBe(false);
    expect(contracts.errorBodySchema.safeParse({ code: "conflict", message: "x" }).success).toBe(
      false,
    );
  });

  test("healthz body", () => {
    const ok = {
      status: "ok",
      components: { db: "ok", queue: "ok", storage: "ok", nodes: "ok" },
    };
    expect(contracts.healthzBodySchema.parse(ok)).toEqual(ok);
    const degraded = {
      ...ok,
      status: "degraded",
      components: { ...ok.components, nodes: "none_ready" },
    };
    expect(contracts.healthzBodySchema.parse(degraded)).toEqual(degraded);
    const missing = { status: "down", components: { db: "down", queue: "ok" } };
    expect(contracts.healthzBodySchema.safeParse(missing).success).toBe(false);
  });
});
