import { mkdirSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, test } from "vitest";
import type { Project } from "../../../shared/contracts/project.ts";
import {
  ALICE,
  BOB,
  type ErrorJson,
  jsonOf,
  startFunctionsHarness,
} from "./support/functions-harness.ts";
import { functionsHarnessForFile } from "./support/functions-harness-for-file.ts";

// POST/GET /v1/projects over the whole app, on real Postgres and a real data root behind
// the real agent-host data plane (its open-existing check over the real workspace layer).

const h = functionsHarnessForFile();
let workspace: string;

beforeAll(async () => {
  workspace = join(h.dataRoot, "users", ALICE, "workspace");
  mkdirSync(join(workspace, "code", "app"), { recursive: true });
  writeFileSync(join(workspace, "code", "notes.txt"), "a file");
  mkdirSync(join(h.dataRoot, "elsewhere"), { recursive: true });
  symlinkSync(join(h.dataRoot, "elsewhere"), join(workspace, "code", "link"));
});

async function projectCount(): Promise<number> {
  const [row] = await h.database.sql<{ n: number }[]>`select count(*)::int as n from projects`;
  return row?.n ?? -1;
}

describe("POST /v1/projects", () => {
  test("without workdir_path: a managed project at projects/<uuid>", async () => {
    const res = await h.call("POST", "/v1/projects", { body: {} });
    expect(res.status).toBe(201);
    const project = await jsonOf<Project>(res);
    expect(project.workdir_path).toMatch(/^projects\/[0-9a-f-]{36}$/);
    expect(project).toMatchObject({
      directory_mode: "managed",
      implicit: false,
      name: "Untitled project",
    });
  });

  test("without any body at all (no Content-Type): same as {}", async () => {
    const res = await h.call("POST", "/v1/projects");
    expect(res.status).toBe(201);
  });

  test("linked to an existing directory: checked through the data plane with a scoped capability", async () => {
    const res = await h.call("POST", "/v1/projects", {
      body: { name: "App", workdir_path: " code/app " },
    });
    expect(res.status).toBe(201);
    const project = await jsonOf<Project>(res);
    expect(project).toMatchObject({
      name: "App",
      workdir_path: "code/app",
      directory_mode: "linked",
    });
    expect(h.dataPlane.seen.at(-1)).toEqual({
      path: "/internal/v1/workdirs/check",
      uid: ALICE,
      workdirPath: "code/app",
      ops: ["check"],
    });
  });

  test("linked: a missing directory is 404, a file 400, a symlink 400; nothing is created", async () => {
    const before = await projectCount();
    const missing = await h.call("POST", "/v1/projects", { body: { workdir_path: "code/nope" } });
    expect(missing.status).toBe(404);
    expect((await jsonOf<ErrorJson>(missing)).error.details?.reason).toBe("workdir_missing");
    const file = await h.call("POST", "/v1/projects", { body: { workdir_path: "code/notes.txt" } });
    expect(file.status).toBe(400);
    const link = await h.call("POST", "/v1/projects", { body: { workdir_path: "code/link" } });
    expect(link.status).toBe(400);
    expect((await jsonOf<ErrorJson>(link)).error.details?.reason).toBe("symlink_refused");
    // Another user's directory does not exist for bob (his own workspace has no code/app).
    const bob = await h.call("POST", "/v1/projects", {
      uid: BOB,
      body: { workdir_path: "code/app" },
    });
    expect(bob.status).toBe(404);
    expect(await projectCount()).toBe(before);
  });

  test.each([
    ["../etc", "dot_component"],
    ["/abs/path", "absolute"],
    ["a//b", "empty_component"],
    ["a\\b", "backslash"],
    ["http://x/y", "url"],
    ["projects/not-a-uuid", "managed_shape"],
    ["", "empty"],
  ])("bad workdir_path %j is 400 (%s) without asking the data plane", async (path, rule) => {
    const asked = h.dataPlane.seen.length;
    const res = await h.call("POST", "/v1/projects", { body: { workdir_path: path } });
    expect(res.status).toBe(400);
    const body = await jsonOf<ErrorJson>(res);
    expect(body.error.code).toBe("invalid_request");
    expect(JSON.stringify(body.error.details)).toContain(rule);
    expect(h.dataPlane.seen.length).toBe(asked);
  });

  test("wrong types, unknown fields, non-JSON and oversized bodies", async () => {
    const wrongType = await h.call("POST", "/v1/projects", { body: { name: 5 } });
    expect(wrongType.status).toBe(400);
    expect((await jsonOf<ErrorJson>(wrongType)).error.details?.issues).toEqual([
      expect.objectContaining({ path: "name" }),
    ]);
    const unknown = await h.call("POST", "/v1/projects", { body: { name: "x", owner: "bob" } });
    expect(unknown.status).toBe(400);
    const malformed = await h.call("POST", "/v1/projects", { body: "{not json" });
    expect(malformed.status).toBe(400);
    expect((await jsonOf<ErrorJson>(malformed)).error.code).toBe("invalid_request");
    const text = await h.call("POST", "/v1/projects", {
      body: "name=x",
      headers: { "content-type": "text/plain" },
    });
    expect(text.status).toBe(400);
    const huge = await h.call("POST", "/v1/projects", {
      body: { name: "x".repeat(3 * 1024 * 1024) },
    });
    expect(huge.status).toBe(413);
    expect((await jsonOf<ErrorJson>(huge)).error.code).toBe("payload_too_large");
  });

  test("Idempotency-Key: same body replays the project, another body is 409", async () => {
    const key = crypto.randomUUID();
    const headers = { "idempotency-key": key };
    const first = await h.call("POST", "/v1/projects", { body: { name: "Once" }, headers });
    const again = await h.call("POST", "/v1/projects", { body: { name: "Once" }, headers });
    expect(first.status).toBe(201);
    expect(again.status).toBe(201);
    expect(await jsonOf<Project>(again)).toEqual(await jsonOf<Project>(first));
    const other = await h.call("POST", "/v1/projects", { body: { name: "Other" }, headers });
    expect(other.status).toBe(409);
    expect((await jsonOf<ErrorJson>(other)).error.details?.reason).toBe("idempotency_key_reused");
    // Keys are per user: bob may use the same key for his own project.
    const bob = await h.call("POST", "/v1/projects", {
      uid: BOB,
      body: { name: "Other" },
      headers,
    });
    expect(bob.status).toBe(201);
  });

  test("20 concurrent creates with one Idempotency-Key make one project", async () => {
    const headers = { "idempotency-key": crypto.randomUUID() };
    const before = await projectCount();
    const responses = await Promise.all(
      Array.from({ length: 20 }, () =>
        h.call("POST", "/v1/projects", { body: { name: "Race" }, headers }),
      ),
    );
    expect(responses.map((r) => r.status)).toEqual(Array(20).fill(201));
    const ids = new Set(
      await Promise.all(responses.map(async (r) => (await jsonOf<Project>(r)).id)),
    );
    expect(ids.size).toBe(1);
    expect(await projectCount()).toBe(before + 1);
  });
});

describe("GET /v1/projects", () => {
  test("lists the caller's projects only, newest first", async () => {
    const made = await jsonOf<Project>(
      await h.call("POST", "/v1/projects", { body: { name: "Newest" } }),
    );
    const list = await jsonOf<{ items: Project[] }>(await h.call("GET", "/v1/projects"));
    expect(list.items[0]).toEqual(made);
    const bobs = await jsonOf<{ items: Project[] }>(
      await h.call("GET", "/v1/projects", { uid: "carol" }),
    );
    expect(bobs.items).toEqual([]);
  });

  test("one project; another user's, an unknown and a malformed id are all 404", async () => {
    const made = await jsonOf<Project>(await h.call("POST", "/v1/projects", { body: {} }));
    const own = await h.call("GET", `/v1/projects/${made.id}`);
    expect(own.status).toBe(200);
    expect(await jsonOf<Project>(own)).toEqual(made);
    for (const [uid, id] of [
      [BOB, made.id],
      [ALICE, crypto.randomUUID()],
      [ALICE, "not-a-uuid"],
      [ALICE, `${made.id}x`],
    ] as const) {
      const res = await h.call("GET", `/v1/projects/${id}`, { uid });
      expect(res.status, `${uid} ${id}`).toBe(404);
      expect((await jsonOf<ErrorJson>(res)).error.code).toBe("not_found");
    }
  });
});

describe("dependencies and auth", () => {
  test("no token or a bad token: 401 with WWW-Authenticate and no detail", async () => {
    const attempts: Record<string, string>[] = [
      {},
      { authorization: "Bearer nope" },
      { authorization: "Basic YTpi" },
    ];
    for (const headers of attempts) {
      const res = await h.call("GET", "/v1/projects", { uid: null, headers });
      expect(res.status).toBe(401);
      expect(res.headers.get("www-authenticate")).toContain("Bearer");
      expect((await jsonOf<ErrorJson>(res)).error).toEqual({
        code: "unauthenticated",
        message: expect.any(String),
      });
    }
  });

  test("every response carries a request id, echoed when the caller sent a safe one", async () => {
    const res = await h.call("GET", "/v1/projects", { headers: { "x-request-id": "trace-123" } });
    expect(res.headers.get("x-request-id")).toBe("trace-123");
    const err = await h.call("GET", "/v1/projects", { uid: null });
    expect(err.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/);
  });

  test("a data plane that does not answer: linked create is 503, nothing is created", async () => {
    const other = await startFunctionsHarness();
    try {
      await other.dataPlane.close();
      const res = await other.call("POST", "/v1/projects", { body: { workdir_path: "code/app" } });
      expect(res.status).toBe(503);
      expect((await jsonOf<ErrorJson>(res)).error.code).toBe("unavailable");
      const [row] = await other.database.sql<
        { n: number }[]
      >`select count(*)::int as n from projects`;
      expect(row?.n).toBe(0);
    } finally {
      await other.close().catch(() => {});
    }
  });
});
