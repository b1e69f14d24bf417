import { describe, expect, test } from "vitest";
import {
  DEFAULT_PAGE_LIMIT,
  MAX_PAGE_LIMIT,
  MAX_PROJECT_NAME_CHARS,
  pageQuerySchema,
  parseContract,
  parseThreadCreateRequest,
  projectCreateRequestSchema,
  projectListSchema,
  projectSchema,
  threadCreateErrorCode,
  threadCreateRequestSchema,
  threadPageSchema,
  threadSchema,
} from "../../../shared/contracts/index.ts";
import { httpStatusOf, toErrorBody } from "../../../shared/errors/index.ts";

const ID = "0f8fd04e-1c8b-4c4b-9a4e-6f2d3b1a0c9d";
const ID2 = "1f8fd04e-1c8b-4c4b-9a4e-6f2d3b1a0c9d";
const AT = "2025-01-31T12:00:00Z";

describe("project contracts", () => {
  test("create accepts an empty body, a name, and a valid workdir_path", () => {
    expect(projectCreateRequestSchema.parse({})).toEqual({});
    expect(projectCreateRequestSchema.parse({ name: "  Docs " })).toEqual({ name: "Docs" });
    expect(projectCreateRequestSchema.parse({ workdir_path: "code/app" })).toEqual({
      workdir_path: "code/app",
    });
  });

  test.each([["../x"], ["/x"], ["a//b"], ["projects/manual"], [""], ["a\\b"]])(
    "create rejects workdir_path %j with the path rule's message",
    (workdir_path) => {
      const result = parseContract(projectCreateRequestSchema, { workdir_path });
      expect(result.ok).toBe(false);
      if (result.ok) return;
      expect(result.error.code).toBe("invalid_request");
      expect(result.error.message).toContain("workdir_path");
      const issues = result.error.details?.issues as { path: string; message: string }[];
      expect(issues[0]?.path).toBe("workdir_path");
    },
  );

  test("create is strict and bounds the name", () => {
    expect(projectCreateRequestSchema.safeParse({ nam: "typo" }).success).toBe(false);
    expect(projectCreateRequestSchema.safeParse({ name: "" }).success).toBe(false);
    expect(
      projectCreateRequestSchema.safeParse({ name: "x".repeat(MAX_PROJECT_NAME_CHARS) }).success,
    ).toBe(true);
    expect(
      projectCreateRequestSchema.safeParse({ name: "x".repeat(MAX_PROJECT_NAME_CHARS + 1) })
        .success,
    ).toBe(false);
    expect(projectCreateRequestSchema.safeParse({ name: 5 }).success).toBe(false);
  });

  test("project resource and list", () => {
    const project = {
      id: ID,
      name: "Untitled",
      workdir_path: `projects/${ID}`,
      directory_mode: "managed",
      implicit: true,
      created_at: AT,
    };
    expect(projectSchema.parse(project)).toEqual(project);
    expect(projectListSchema.parse({ items: [project] })).toEqual({ items: [project] });
    expect(projectSchema.safeParse({ ...project, directory_mode: "shared" }).success).toBe(false);
    expect(projectSchema.safeParse({ ...project, name: null }).success).toBe(false);
    expect(projectSchema.safeParse({ ...project, created_at: "yesterday" }).success).toBe(false);
  });
});

describe("thread contracts", () => {
  test("create accepts the documented fields", () => {
    const body = { project_id: ID, title: "Plan", parent_thread_id: ID2 };
    expect(threadCreateRequestSchema.parse(body)).toEqual(body);
    expect(threadCreateRequestSchema.parse({})).toEqual({});
  });

  test("workdir_path in the body is a 422 (unprocessable), distinguishable from a 400", () => {
    const result = parseThreadCreateRequest({ title: "x", workdir_path: "code" });
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.error.code).toBe("unprocessable");
    expect(httpStatusOf(result.error.code)).toBe(422);
    expect(toErrorBody(result.error).error.details).toMatchObject({
      field: "workdir_path",
      reason: "workdir_path_not_allowed",
    });

    const zodError = threadCreateRequestSchema.safeParse({ workdir_path: "code" }).error;
    expect(zodError).toBeDefined();
    if (zodError) expect(threadCreateErrorCode(zodError)).toBe("unprocessable");
  });

  test("workdir_path wins even when other fields are also wrong", () => {
    const result = parseThreadCreateRequest({ workdir_path: "code", project_id: "nope", extra: 1 });
    expect(result.ok ? undefined : result.error.code).toBe("unprocessable");
  });

  test("other bad bodies are a 400 (invalid_request)", () => {
    for (const body of [{ extra: 1 }, { project_id: "not-a-uuid" }, { title: 7 }, null, "x", []]) {
      const result = parseThreadCreateRequest(body);
      expect(result.ok).toBe(false);
      if (!result.ok) expect(result.error.code).toBe("invalid_request");
    }
    const zodError = threadCreateRequestSchema.safeParse({ extra: 1 }).error;
    if (zodError) expect(threadCreateErrorCode(zodError)).toBe("invalid_request");
  });

  test("a good body parses to its value", () => {
    expect(parseThreadCreateRequest({ project_id: ID })).toEqual({
      ok: true,
      value: { project_id: ID },
    });
  });

  test("thread resource and page", () => {
    const thread = {
      thread_id: ID,
      project_id: ID2,
      workdir_path: "code",
      parent_thread_id: null,
      title: null,
      status: "active",
      created_at: AT,
    };
    expect(threadSchema.parse(thread)).toEqual(thread);
    expect(threadPageSchema.parse({ items: [thread], next_cursor: null })).toEqual({
      items: [thread],
      next_cursor: null,
    });
    expect(threadPageSchema.safeParse({ items: [thread] }).success).toBe(false);
    expect(threadSchema.safeParse({ ...thread, status: "archived" }).success).toBe(false);
  });
});

describe("paging query", () => {
  test("limit defaults, coerces from the query string and is capped", () => {
    expect(pageQuerySchema.parse({})).toEqual({ limit: DEFAULT_PAGE_LIMIT });
    expect(pageQuerySchema.parse({ limit: "10", cursor: "abc" })).toEqual({
      limit: 10,
      cursor: "abc",
    });
    expect(pageQuerySchema.parse({ limit: String(MAX_PAGE_LIMIT) }).limit).toBe(MAX_PAGE_LIMIT);
    expect(pageQuerySchema.safeParse({ limit: String(MAX_PAGE_LIMIT + 1) }).success).toBe(false);
    expect(pageQuerySchema.safeParse({ limit: "0" }).success).toBe(false);
    expect(pageQuerySchema.safeParse({ limit: "2.5" }).success).toBe(false);
    expect(pageQuerySchema.safeParse({ limit: "ten" }).success).toBe(false);
    expect(pageQuerySchema.safeParse({ cursor: "" }).success).toBe(false);
  });
});
