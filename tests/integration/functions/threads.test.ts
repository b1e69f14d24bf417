import { describe, expect, test } from "vitest";
import type { Project } from "../../../shared/contracts/project.ts";
import type { Run } from "../../../shared/contracts/run.ts";
import type { Thread } from "../../../shared/contracts/thread.ts";
import { BOB, type ErrorJson, jsonOf } from "./support/functions-harness.ts";
import { functionsHarnessForFile } from "./support/functions-harness-for-file.ts";

const h = functionsHarnessForFile();

async function createThread(body: unknown = {}, uid?: string): Promise<Thread> {
  const res = await h.call("POST", "/v1/threads", { body, ...(uid ? { uid } : {}) });
  expect(res.status).toBe(201);
  return jsonOf<Thread>(res);
}

async function count(table: "projects" | "conversations"): Promise<number> {
  const [row] = await h.database.sql<
    { n: number }[]
  >`select count(*)::int as n from ${h.database.sql(table)}`;
  return row?.n ?? -1;
}

describe("POST /v1/threads", () => {
  test("without a project: an implicit managed project is created with it", async () => {
    const thread = await createThread({ title: "  Hello  " });
    expect(thread).toMatchObject({ title: "Hello", parent_thread_id: null, status: "active" });
    const project = await jsonOf<Project>(await h.call("GET", `/v1/projects/${thread.project_id}`));
    expect(project).toMatchObject({
      implicit: true,
      directory_mode: "managed",
      workdir_path: thread.workdir_path,
    });
  });

  test("in an existing project: its Workdir", async () => {
    const project = await jsonOf<Project>(
      await h.call("POST", "/v1/projects", { body: { name: "P" } }),
    );
    const thread = await createThread({ project_id: project.id });
    expect(thread).toMatchObject({ project_id: project.id, workdir_path: project.workdir_path });
  });

  test("a child inherits its parent's project and runtime scope root", async () => {
    const root = await createThread({});
    const child = await createThread({ parent_thread_id: root.thread_id });
    const grandchild = await createThread({
      parent_thread_id: child.thread_id,
      project_id: root.project_id,
    });
    expect(child).toMatchObject({ project_id: root.project_id, parent_thread_id: root.thread_id });
    expect(grandchild.parent_thread_id).toBe(child.thread_id);
    // Runs of a child run in the root's execution tree (one sandbox per tree).
    const run = await jsonOf<Run>(
      await h.call("POST", `/v1/threads/${grandchild.thread_id}/runs`, { body: { input: "hi" } }),
    );
    expect(run.runtime_scope_id).toBe(root.thread_id);
  });

  test("a child naming another project: 422, nothing created", async () => {
    const root = await createThread({});
    const other = await jsonOf<Project>(await h.call("POST", "/v1/projects", { body: {} }));
    const before = await count("conversations");
    const res = await h.call("POST", "/v1/threads", {
      body: { parent_thread_id: root.thread_id, project_id: other.id },
    });
    expect(res.status).toBe(422);
    expect((await jsonOf<ErrorJson>(res)).error.details?.reason).toBe("child_project_mismatch");
    expect(await count("conversations")).toBe(before);
  });

  test("workdir_path in the body: 422 (also with other bad fields); nothing created", async () => {
    const before = [await count("projects"), await count("conversations")];
    for (const body of [{ workdir_path: "code" }, { workdir_path: "code", title: "t" }]) {
      const res = await h.call("POST", "/v1/threads", { body });
      expect(res.status).toBe(422);
      const error = (await jsonOf<ErrorJson>(res)).error;
      expect(error.code).toBe("unprocessable");
      expect(error.details?.reason).toBe("workdir_path_not_allowed");
    }
    expect([await count("projects"), await count("conversations")]).toEqual(before);
  });

  test("bad input: unknown field, wrong type, malformed ids are 400; unknown ids 404", async () => {
    expect((await h.call("POST", "/v1/threads", { body: { color: "red" } })).status).toBe(400);
    expect((await h.call("POST", "/v1/threads", { body: { title: 1 } })).status).toBe(400);
    expect((await h.call("POST", "/v1/threads", { body: { project_id: "nope" } })).status).toBe(
      400,
    );
    expect((await h.call("POST", "/v1/threads", { body: { title: "" } })).status).toBe(400);
    expect((await h.call("POST", "/v1/threads", { body: [] })).status).toBe(400);
    const unknownProject = await h.call("POST", "/v1/threads", {
      body: { project_id: crypto.randomUUID() },
    });
    expect(unknownProject.status).toBe(404);
    const unknownParent = await h.call("POST", "/v1/threads", {
      body: { parent_thread_id: crypto.randomUUID() },
    });
    expect(unknownParent.status).toBe(404);
  });

  test("another user's project or parent thread is 404, and nothing is created", async () => {
    const bobsThread = await createThread({}, BOB);
    const before = await count("conversations");
    const viaProject = await h.call("POST", "/v1/threads", {
      body: { project_id: bobsThread.project_id },
    });
    const viaParent = await h.call("POST", "/v1/threads", {
      body: { parent_thread_id: bobsThread.thread_id },
    });
    expect([viaProject.status, viaParent.status]).toEqual([404, 404]);
    expect(await count("conversations")).toBe(before);
  });

  test("Idempotency-Key: one thread and one implicit project for concurrent retries", async () => {
    const headers = { "idempotency-key": crypto.randomUUID() };
    const [projectsBefore, threadsBefore] = [await count("projects"), await count("conversations")];
    const responses = await Promise.all(
      Array.from({ length: 10 }, () =>
        h.call("POST", "/v1/threads", { body: { title: "t" }, headers }),
      ),
    );
    const ids = new Set(
      await Promise.all(responses.map(async (r) => (await jsonOf<Thread>(r)).thread_id)),
    );
    expect(ids.size).toBe(1);
    expect([await count("projects"), await count("conversations")]).toEqual([
      projectsBefore + 1,
      threadsBefore + 1,
    ]);
    const other = await h.call("POST", "/v1/threads", { body: { title: "u" }, headers });
    expect(other.status).toBe(409);
  });
});

describe("GET /v1/threads", () => {
  test("cursor pages, newest first, without gaps or repeats; other users' threads never appear", async () => {
    const uid = `pager-${crypto.randomUUID()}`;
    const made: string[] = [];
    for (let i = 0; i < 7; i++) made.push((await createThread({ title: `t${i}` }, uid)).thread_id);
    await createThread({}, BOB);
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const query: string = cursor === null ? "?limit=3" : `?limit=3&cursor=${cursor}`;
      const res = await h.call("GET", `/v1/threads${query}`, { uid });
      expect(res.status).toBe(200);
      const page = await jsonOf<{ items: Thread[]; next_cursor: string | null }>(res);
      seen.push(...page.items.map((t) => t.thread_id));
      cursor = page.next_cursor;
      pages++;
    } while (cursor !== null);
    expect(pages).toBe(3);
    expect(seen).toEqual([...made].reverse());
  });

  test("threads created in one transaction's millisecond still page correctly", async () => {
    const uid = `same-ms-${crypto.randomUUID()}`;
    const ids = await Promise.all(
      Array.from({ length: 6 }, async () => (await createThread({}, uid)).thread_id),
    );
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const query: string = cursor === null ? "?limit=1" : `?limit=1&cursor=${cursor}`;
      const page = await jsonOf<{ items: Thread[]; next_cursor: string | null }>(
        await h.call("GET", `/v1/threads${query}`, { uid }),
      );
      seen.push(...page.items.map((t) => t.thread_id));
      cursor = page.next_cursor;
    } while (cursor !== null);
    expect([...seen].sort()).toEqual([...ids].sort());
  });

  test("bad cursor or limit: 400", async () => {
    for (const query of [
      "?cursor=garbage",
      "?limit=0",
      "?limit=101",
      "?limit=abc",
      `?cursor=${"x".repeat(600)}`,
    ]) {
      const res = await h.call("GET", `/v1/threads${query}`);
      expect(res.status, query).toBe(400);
    }
  });

  test("GET one: own 200; another user's, unknown, malformed: 404", async () => {
    const thread = await createThread({});
    expect(await jsonOf<Thread>(await h.call("GET", `/v1/threads/${thread.thread_id}`))).toEqual(
      thread,
    );
    for (const [uid, id] of [
      [BOB, thread.thread_id],
      ["alice", crypto.randomUUID()],
      ["alice", "123"],
    ] as const) {
      expect((await h.call("GET", `/v1/threads/${id}`, { uid })).status).toBe(404);
    }
  });
});

describe("DELETE /v1/threads/{id}", () => {
  test("204, then 404 everywhere; it leaves the listing", async () => {
    const thread = await createThread({});
    expect((await h.call("DELETE", `/v1/threads/${thread.thread_id}`, { uid: BOB })).status).toBe(
      404,
    );
    const res = await h.call("DELETE", `/v1/threads/${thread.thread_id}`);
    expect(res.status).toBe(204);
    expect(await res.text()).toBe("");
    expect((await h.call("GET", `/v1/threads/${thread.thread_id}`)).status).toBe(404);
    expect((await h.call("DELETE", `/v1/threads/${thread.thread_id}`)).status).toBe(404);
    const runs = await h.call("POST", `/v1/threads/${thread.thread_id}/runs`, {
      body: { input: "x" },
    });
    expect(runs.status).toBe(404);
    const child = await h.call("POST", "/v1/threads", {
      body: { parent_thread_id: thread.thread_id },
    });
    expect(child.status).toBe(404);
    const list = await jsonOf<{ items: Thread[] }>(await h.call("GET", "/v1/threads?limit=100"));
    expect(list.items.map((t) => t.thread_id)).not.toContain(thread.thread_id);
  });

  test("409 while a run is active; 204 once it is cancelled", async () => {
    const thread = await createThread({});
    const run = await jsonOf<Run>(
      await h.call("POST", `/v1/threads/${thread.thread_id}/runs`, { body: { input: "x" } }),
    );
    const refused = await h.call("DELETE", `/v1/threads/${thread.thread_id}`);
    expect(refused.status).toBe(409);
    expect((await jsonOf<ErrorJson>(refused)).error.details?.reason).toBe("run_active");
    expect((await h.call("POST", `/v1/runs/${run.run_id}/cancel`)).status).toBe(202);
    expect((await h.call("DELETE", `/v1/threads/${thread.thread_id}`)).status).toBe(204);
  });

  test("racing a delete against run submissions: either the run exists and the delete is 409, or the thread is gone and the run 404", async () => {
    for (let i = 0; i < 10; i++) {
      const thread = await createThread({});
      const [del, submit] = await Promise.all([
        h.call("DELETE", `/v1/threads/${thread.thread_id}`),
        h.call("POST", `/v1/threads/${thread.thread_id}/runs`, { body: { input: "x" } }),
      ]);
      const outcome = `${del.status}/${submit.status}`;
      expect(["409/202", "204/404"]).toContain(outcome);
      const [row] = await h.database.sql<{ status: string; runs: number }[]>`
        select c.status, (select count(*)::int from agent_runs r where r.thread_id = c.thread_id) as runs
        from conversations c where c.thread_id = ${thread.thread_id}`;
      expect(row).toEqual(
        outcome === "409/202" ? { status: "active", runs: 1 } : { status: "deleted", runs: 0 },
      );
    }
  });
});
