import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { type UnitApp, unitApp } from "./unit-app.ts";

// Every control-plane route of docs/api.md that the app serves today (the routes marked
// "planned, not built yet" there are not in it); the data plane's /dp/v1 routes belong to
// agent-host. EXTENSIONS are routes we added where docs/api.md is silent (each one has a
// decision record).
const API_MD_ROUTES = [
  "GET /v1/healthz",
  "POST /v1/projects",
  "GET /v1/projects",
  "GET /v1/projects/{id}",
  "POST /v1/threads",
  "GET /v1/threads",
  "GET /v1/threads/{thread_id}",
  "DELETE /v1/threads/{thread_id}",
  "POST /v1/threads/{thread_id}/runs",
  "POST /v1/runs",
  "GET /v1/runs/{run_id}",
  "GET /v1/runs/{run_id}/events",
  "POST /v1/runs/{run_id}/events/ticket",
  "POST /v1/runs/{run_id}/cancel",
  "GET /v1/runs/{run_id}/changes",
  "POST /v1/threads/{thread_id}/files/access",
  "POST /v1/attachments/uploads",
  "POST /v1/threads/{thread_id}/attachments/confirm",
  "GET /v1/threads/{thread_id}/attachments",
  "DELETE /v1/threads/{thread_id}/attachments/{file_id}",
  "POST /v1/threads/{thread_id}/checkpoints",
  "GET /v1/threads/{thread_id}/checkpoints",
  "POST /v1/threads/{thread_id}/checkpoints/{checkpoint_id}/restore",
  "DELETE /v1/threads/{thread_id}/checkpoints/{checkpoint_id}",
  "POST /v1/threads/{thread_id}/fork",
  "GET /v1/skills",
  "POST /v1/admin/skills",
  "GET /v1/admin/skills",
  "PUT /v1/admin/skills/{slug}/grants/{uid}",
  "DELETE /v1/admin/skills/{slug}/grants/{uid}",
  "GET /v1/admin/nodes",
  "POST /v1/admin/nodes/{node_id}/quiesce",
  "POST /v1/admin/nodes/{node_id}/resume",
  "GET /v1/admin/runtime",
  "GET /v1/usage",
  "GET /v1/admin/users/{uid}/limits",
  "PUT /v1/admin/users/{uid}/limits",
  "POST /v1/tokens",
  "GET /v1/tokens",
  "DELETE /v1/tokens/{token_id}",
  "GET /v1/admin/users/{uid}/network",
  "PUT /v1/admin/users/{uid}/network",
  "GET /v1/network",
  "GET /v1/runs/{run_id}/network",
  "PUT /v1/secrets/{name}",
  "GET /v1/secrets",
  "DELETE /v1/secrets/{name}",
  "GET /v1/runs/{run_id}/approvals",
  "POST /v1/runs/{run_id}/approvals/{approval_id}",
  "GET /v1/admin/users/{uid}/approvals",
  "PUT /v1/admin/users/{uid}/approvals",
];
// docs/decisions/0007-skills.md: the presigned upload of a skill archive.
// docs/decisions/0023-thread-history.md: the conversation history of the web console.
const ROOT = join(import.meta.dirname, "../../..");
const EXTENSIONS = ["POST /v1/admin/skills/uploads", "GET /v1/threads/{thread_id}/runs"];

type OpenApiDoc = {
  openapi: string;
  paths: Record<
    string,
    Record<string, { security?: unknown[]; responses: Record<string, unknown> }>
  >;
  components: { schemas: Record<string, unknown>; securitySchemes: Record<string, unknown> };
};

let u: UnitApp;
let doc: OpenApiDoc;

beforeAll(async () => {
  u = await unitApp();
  const res = await u.app.request("/openapi.json");
  expect(res.status).toBe(200);
  doc = (await res.json()) as OpenApiDoc;
});
afterAll(async () => {
  await u?.close();
});

/**
 * The control-plane routes of docs/api.md's tables (`| GET / PUT | \`/v1/…\` |`), leaving
 * out every section marked "Planned, not built yet" (its heading up to the next one).
 */
function builtRoutesOf(markdown: string): string[] {
  const routes: string[] = [];
  for (const section of markdown.split(/^(?=#{2,3} )/m)) {
    if (section.includes("**Planned, not built yet.**")) continue;
    for (const [, methods = "", path = ""] of section.matchAll(
      /^\| ([A-Z /]+) \| `(\/v1\/[^`?]*)`/gm,
    )) {
      for (const method of methods.split("/")) routes.push(`${method.trim()} ${path}`);
    }
  }
  return routes;
}

function documentedRoutes(): string[] {
  return Object.entries(doc.paths).flatMap(([path, methods]) =>
    Object.keys(methods).map((method) => `${method.toUpperCase()} ${path}`),
  );
}

describe("GET /openapi.json", () => {
  test("is OpenAPI 3.1 and lists every control-plane route of docs/api.md", () => {
    expect(doc.openapi).toBe("3.1.0");
    const documented = documentedRoutes();
    for (const route of API_MD_ROUTES) expect(documented, route).toContain(route);
    const unexpected = documented.filter(
      (r) => !API_MD_ROUTES.includes(r) && !EXTENSIONS.includes(r),
    );
    expect(unexpected).toEqual([]);
  });

  test("docs/api.md lists exactly the routes the app serves, apart from its planned sections", async () => {
    const built = builtRoutesOf(await readFile(join(ROOT, "docs/api.md"), "utf8"));
    expect(built.sort()).toEqual(documentedRoutes().sort());
    expect(built.sort()).toEqual([...API_MD_ROUTES, ...EXTENSIONS].sort());
  });

  test("every route but health requires the bearer scheme and documents 401", () => {
    expect(doc.components.securitySchemes.bearer).toMatchObject({ type: "http", scheme: "bearer" });
    for (const [path, methods] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(methods)) {
        if (path === "/v1/healthz") {
          expect(op.security).toEqual([]);
          continue;
        }
        // The event stream also takes its ticket (EventSource sends no header).
        const expected =
          path === "/v1/runs/{run_id}/events"
            ? [{ bearer: [] }, { eventTicket: [] }]
            : [{ bearer: [] }];
        expect(op.security, `${method} ${path}`).toEqual(expected);
        expect(op.responses, `${method} ${path}`).toHaveProperty("401");
      }
    }
  });

  test("names the shared schemas as components", () => {
    for (const name of [
      "Project",
      "Thread",
      "Run",
      "ErrorBody",
      "ThreadCreateRequest",
      "FilesAccessResponse",
    ]) {
      expect(doc.components.schemas, name).toHaveProperty(name);
    }
  });

  test("every documented route answers 401 without a token (health excepted)", async () => {
    for (const route of documentedRoutes()) {
      const [method, template] = route.split(" ") as [string, string];
      const path = template.replace(/\{[^}]+\}/g, crypto.randomUUID());
      const res = await u.app.request(path, { method });
      expect(res.status, route).toBe(route === "GET /v1/healthz" ? 503 : 401);
    }
  });
});

describe("the documents a client generator and Redocly read", () => {
  type Op = {
    operationId?: string;
    tags?: string[];
    security?: unknown[];
    parameters?: Array<{ name: string; in: string }>;
    requestBody?: { content: Record<string, { example?: unknown }> };
    responses: Record<string, { content?: Record<string, { schema?: { $ref?: string } }> }>;
  };
  const ops = () =>
    Object.entries(doc.paths).flatMap(([path, methods]) =>
      Object.entries(methods).map(([method, op]) => ({ key: `${method} ${path}`, op: op as Op })),
    );

  test("unique operationIds, tags, examples for every JSON body, security [] on health", () => {
    const ids = ops().map(({ op }) => op.operationId);
    expect(ids.every((id) => typeof id === "string")).toBe(true);
    expect(new Set(ids).size).toBe(ids.length);
    for (const { key, op } of ops()) {
      expect(op.tags?.length, key).toBe(1);
      const json = op.requestBody?.content["application/json"];
      if (json !== undefined) expect(json.example, key).toBeDefined();
    }
    expect((doc.paths["/v1/healthz"]?.get as Op | undefined)?.security).toEqual([]);
    expect((doc as unknown as { servers: Array<{ url: string }> }).servers[0]?.url).toBe(
      "http://localhost",
    );
  });

  test("the event stream: RunEvent frames, Last-Event-ID, and the ticket as an alternative", () => {
    const events = doc.paths["/v1/runs/{run_id}/events"]?.get as unknown as Op;
    expect(events.responses["200"]?.content?.["text/event-stream"]?.schema?.$ref).toBe(
      "#/components/schemas/RunEvent",
    );
    expect(events.parameters?.map((p) => `${p.in}:${p.name.toLowerCase()}`)).toContain(
      "header:last-event-id",
    );
    expect(events.security).toEqual([{ bearer: [] }, { eventTicket: [] }]);
    const post = doc.paths["/v1/runs"]?.post as unknown as Op;
    expect(post.parameters?.map((p) => `${p.in}:${p.name}`)).toContain("header:idempotency-key");
    expect(Object.keys(doc.components.schemas)).toContain("RunEvent");
  });

  test("the data plane serves its own document of the Workdir files API", async () => {
    const { dataPlaneOpenApiDocument } = await import(
      "../../../agent-host/data-plane/data-plane-openapi.ts"
    );
    const dp = dataPlaneOpenApiDocument("http://127.0.0.1:8081") as unknown as OpenApiDoc;
    expect(Object.keys(dp.paths).sort()).toEqual([
      "/dp/v1/dirs",
      "/dp/v1/files",
      "/dp/v1/files/batch",
      "/dp/v1/files/content",
    ]);
    expect(Object.keys(dp.components.securitySchemes)).toEqual(["capability"]);
  });
});
