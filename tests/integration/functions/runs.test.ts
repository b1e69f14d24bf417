import { describe, expect, test } from "vitest";
import type { Project } from "../../../shared/contracts/project.ts";
import type { Run } from "../../../shared/contracts/run.ts";
import type { Thread } from "../../../shared/contracts/thread.ts";
import { BOB, type ErrorJson, jsonOf } from "./support/functions-harness.ts";
import { functionsHarnessForFile } from "./support/functions-harness-for-file.ts";

const h = functionsHarnessForFile({ dbMax: 60 });

const TABLES = ["projects", "conversations", "messages", "requests", "agent_runs"] as const;

async function counts(): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const table of TABLES) {
    const [row] = await h.database.sql<
      { n: number }[]
    >`select count(*)::int as n from ${h.database.sql(table)}`;
    out[table] = row?.n ?? -1;
  }
  return out;
}

async function newThread(uid = "alice"): Promise<Thread> {
  return jsonOf<Thread>(await h.call("POST", "/v1/threads", { body: {}, uid }));
}

describe("POST /v1/threads/{id}/runs", () => {
  test("202 pending run; message, request and run committed together; dispatched once after commit", async () => {
    await h.drainDispatches();
    const thread = await newThread();
    const res = await h.call("POST", `/v1/threads/${thread.thread_id}/runs`, {
      body: { input: "list files", agent: { max_steps: 3 } },
    });
    expect(res.status).toBe(202);
    const run = await jsonOf<Run>(res);
    expect(run).toMatchObject({
      thread_id: thread.thread_id,
      parent_run_id: null,
      runtime_scope_id: thread.thread_id,
      status: "pending",
      cancel_requested: false,
    });
    expect(run).not.toHaveProperty("started_at");
    const [row] = await h.database.sql<
      { attempt: number; input: string; agent: unknown; dispatched: boolean; content: string }[]
    >`select r.attempt, r.input, r.agent, r.dispatched_at is not null as dispatched, m.content
      from agent_runs r join requests q on q.id = r.request_id join messages m on m.id = q.message_id
      where r.run_id = ${run.run_id}`;
    expect(row).toEqual({
      attempt: 0,
      input: "list files",
      agent: { max_steps: 3 },
      dispatched: true,
      content: "list files",
    });
    expect(await h.drainDispatches()).toEqual([run.run_id]);
  });

  test("bad input: missing/empty/oversized input, unknown fields, wrong agent options: 400; nothing written", async () => {
    const thread = await newThread();
    const before = await counts();
    for (const body of [
      {},
      { input: "" },
      { input: 5 },
      { input: "x", extra: 1 },
      { input: "x", agent: { max_steps: 0 } },
      { input: "x", agent: { temperature: 2 } },
      { input: "x".repeat(200_001) },
    ]) {
      const res = await h.call("POST", `/v1/threads/${thread.thread_id}/runs`, { body });
      expect(res.status, JSON.stringify(body).slice(0, 60)).toBe(400);
    }
    const noBody = await h.call("POST", `/v1/threads/${thread.thread_id}/runs`);
    expect(noBody.status).toBe(400);
    expect(await counts()).toEqual(before);
  });

  test("another user's thread, an unknown and a malformed thread id: 404", async () => {
    const bobs = await newThread(BOB);
    for (const id of [bobs.thread_id, crypto.randomUUID(), "not-a-uuid"]) {
      const res = await h.call("POST", `/v1/threads/${id}/runs`, { body: { input: "x" } });
      expect(res.status, id).toBe(404);
    }
  });
});

describe("POST /v1/runs", () => {
  test("creates thread and implicit project in the same transaction", async () => {
    const res = await h.call("POST", "/v1/runs", { body: { input: "hello", title: "First" } });
    expect(res.status).toBe(202);
    const { run, thread } = await jsonOf<{ run: Run; thread: Thread }>(res);
    expect(thread).toMatchObject({ title: "First", parent_thread_id: null });
    expect(run).toMatchObject({
      thread_id: thread.thread_id,
      runtime_scope_id: thread.thread_id,
      status: "pending",
    });
    const project = await jsonOf<Project>(await h.call("GET", `/v1/projects/${thread.project_id}`));
    expect(project.implicit).toBe(true);
  });

  test("in an existing project; another user's project is 404; workdir_path is 422", async () => {
    const project = await jsonOf<Project>(await h.call("POST", "/v1/projects", { body: {} }));
    const ok = await jsonOf<{ thread: Thread }>(
      await h.call("POST", "/v1/runs", { body: { input: "x", project_id: project.id } }),
    );
    expect(ok.thread.workdir_path).toBe(project.workdir_path);
    const before = await counts();
    const bobs = await h.call("POST", "/v1/runs", {
      uid: BOB,
      body: { input: "x", project_id: project.id },
    });
    expect(bobs.status).toBe(404);
    const workdir = await h.call("POST", "/v1/runs", {
      body: { input: "x", workdir_path: "code" },
    });
    expect(workdir.status).toBe(422);
    expect(await counts()).toEqual(before);
  });

  test("a failure after the message insert leaves no partial rows and no message on the queue", async () => {
    await h.drainDispatches();
    // A real database failure at the last insert of the transaction (the run), after
    // project, thread, message and request were written.
    await h.database.sql.unsafe(`
      create function fail_injected_run() returns trigger language plpgsql as $$
      begin
        if new.input = 'boom' then raise exception 'injected failure in agent_runs'; end if;
        return new;
      end $$;
      create trigger fail_injected_run before insert on agent_runs
        for each row execute function fail_injected_run();`);
    try {
      const before = await counts();
      const res = await h.call("POST", "/v1/runs", { body: { input: "boom" } });
      expect(res.status).toBe(500);
      const text = await res.text();
      expect(text).not.toMatch(/injected|agent_runs|insert|select/i);
      expect(JSON.parse(text)).toEqual({
        error: { code: "internal", message: expect.any(String) },
      });
      const thread = await newThread();
      const inThread = await h.call("POST", `/v1/threads/${thread.thread_id}/runs`, {
        body: { input: "boom" },
      });
      expect(inThread.status).toBe(500);
      expect(await counts()).toEqual({
        ...before,
        projects: (before.projects ?? 0) + 1,
        conversations: (before.conversations ?? 0) + 1,
      });
      expect(await h.drainDispatches()).toEqual([]);
    } finally {
      await h.database.sql.unsafe(
        "drop trigger fail_injected_run on agent_runs; drop function fail_injected_run();",
      );
    }
  });
});

describe("Idempotency-Key on run submission", () => {
  test("same key and body: the original run; another body: 409", async () => {
    await h.drainDispatches();
    const thread = await newThread();
    const headers = { "idempotency-key": crypto.randomUUID() };
    const path = `/v1/threads/${thread.thread_id}/runs`;
    const first = await jsonOf<Run>(
      await h.call("POST", path, { body: { input: "once" }, headers }),
    );
    const again = await h.call("POST", path, { body: { input: "once" }, headers });
    expect(again.status).toBe(202);
    expect(await jsonOf<Run>(again)).toEqual(first);
    const other = await h.call("POST", path, { body: { input: "twice" }, headers });
    expect(other.status).toBe(409);
    expect((await jsonOf<ErrorJson>(other)).error.details?.reason).toBe("idempotency_key_reused");
    // The same key on the other submission route is another request: 409 too.
    const elsewhere = await h.call("POST", "/v1/runs", { body: { input: "once" }, headers });
    expect(elsewhere.status).toBe(409);
    expect(await h.drainDispatches()).toEqual([first.run_id]);
  });

  test("only a keyed submission stores its body's hash (nothing to compare without a key)", async () => {
    await h.drainDispatches();
    const thread = await newThread();
    const path = `/v1/threads/${thread.thread_id}/runs`;
    const keyed = await jsonOf<Run>(
      await h.call("POST", path, {
        body: { input: "keyed" },
        headers: { "idempotency-key": crypto.randomUUID() },
      }),
    );
    const plain = await jsonOf<Run>(await h.call("POST", path, { body: { input: "keyed" } }));
    const hashed = await h.database.sql<{ run_id: string; hashed: boolean }[]>`
      select r.run_id, q.request_hash is not null as hashed
      from agent_runs r join requests q on q.id = r.request_id
      where r.run_id in (${keyed.run_id}, ${plain.run_id})`;
    expect(Object.fromEntries(hashed.map((row) => [row.run_id, row.hashed]))).toEqual({
      [keyed.run_id]: true,
      [plain.run_id]: false,
    });
    // The same body again without a key is a new run, never a replay of either.
    const second = await jsonOf<Run>(await h.call("POST", path, { body: { input: "keyed" } }));
    expect(new Set([keyed.run_id, plain.run_id, second.run_id]).size).toBe(3);
    expect((await h.drainDispatches()).sort()).toEqual(
      [keyed.run_id, plain.run_id, second.run_id].sort(),
    );
  });

  test("50 concurrent submissions with one key create exactly one run (and one thread and project)", async () => {
    await h.drainDispatches();
    const before = await counts();
    const headers = { "idempotency-key": crypto.randomUUID() };
    const responses = await Promise.all(
      Array.from({ length: 50 }, () =>
        h.call("POST", "/v1/runs", { body: { input: "race" }, headers }),
      ),
    );
    expect(responses.map((r) => r.status)).toEqual(Array(50).fill(202));
    const bodies = await Promise.all(responses.map((r) => jsonOf<{ run: Run; thread: Thread }>(r)));
    expect(new Set(bodies.map((b) => b.run.run_id)).size).toBe(1);
    expect(new Set(bodies.map((b) => b.thread.thread_id)).size).toBe(1);
    const after = await counts();
    for (const table of TABLES) expect(after[table], table).toBe((before[table] ?? 0) + 1);
    expect(await h.drainDispatches()).toEqual([bodies[0]?.run.run_id]);
  });

  test("50 concurrent submissions to one thread with one key: one run", async () => {
    const thread = await newThread();
    const headers = { "idempotency-key": crypto.randomUUID() };
    const responses = await Promise.all(
      Array.from({ length: 50 }, () =>
        h.call("POST", `/v1/threads/${thread.thread_id}/runs`, {
          body: { input: "race" },
          headers,
        }),
      ),
    );
    const ids = new Set(
      await Promise.all(responses.map(async (r) => (await jsonOf<Run>(r)).run_id)),
    );
    expect(ids.size).toBe(1);
    const [row] = await h.database.sql<{ n: number }[]>`
      select count(*)::int as n from agent_runs where thread_id = ${thread.thread_id}`;
    expect(row?.n).toBe(1);
  });

  test("a malformed key is 400", async () => {
    const res = await h.call("POST", "/v1/runs", {
      body: { input: "x" },
      headers: { "idempotency-key": "x".repeat(256) },
    });
    expect(res.status).toBe(400);
  });
});

describe("GET /v1/runs/{id} and /changes", () => {
  test("own run 200; another user's, unknown and malformed: 404", async () => {
    const { run } = await jsonOf<{ run: Run }>(
      await h.call("POST", "/v1/runs", { body: { input: "x" } }),
    );
    expect(await jsonOf<Run>(await h.call("GET", `/v1/runs/${run.run_id}`))).toEqual(run);
    const changes = await h.call("GET", `/v1/runs/${run.run_id}/changes`);
    expect(changes.status).toBe(200);
    // Not run yet: nothing recorded, and the list says it is not complete.
    expect(await changes.json()).toEqual({ items: [], truncated: true, batches: [] });
    expect((await h.call("GET", `/v1/runs/${run.run_id}/changes?batch=zzz`)).status).toBe(400);
    for (const [uid, id] of [
      [BOB, run.run_id],
      ["alice", crypto.randomUUID()],
      ["alice", "zzz"],
    ] as const) {
      expect((await h.call("GET", `/v1/runs/${id}`, { uid })).status).toBe(404);
      expect((await h.call("GET", `/v1/runs/${id}/changes`, { uid })).status).toBe(404);
    }
  });
});

describe("POST /v1/runs/{id}/cancel", () => {
  test("a pending run is cancelled at once, with its terminal event; repeating is 202", async () => {
    const { run } = await jsonOf<{ run: Run }>(
      await h.call("POST", "/v1/runs", { body: { input: "x" } }),
    );
    const res = await h.call("POST", `/v1/runs/${run.run_id}/cancel`);
    expect(res.status).toBe(202);
    const cancelled = await jsonOf<Run>(res);
    expect(cancelled).toMatchObject({ status: "cancelled", cancel_requested: true });
    expect(cancelled.finished_at).toBeDefined();
    const again = await h.call("POST", `/v1/runs/${run.run_id}/cancel`, { body: {} });
    expect(again.status).toBe(202);
    const events = await h.database
      .sql`select seq, type, data from run_events where run_id = ${run.run_id}`;
    expect(events).toEqual([{ seq: 1, type: "run.completed", data: { status: "cancelled" } }]);
  });

  test("a running run gets cancel_requested and its worker is notified", async () => {
    const { run } = await jsonOf<{ run: Run }>(
      await h.call("POST", "/v1/runs", { body: { input: "x" } }),
    );
    await h.database.sql`update agent_runs set status = 'running', attempt = 1, owner_node = 'n1',
      lease_expires_at = now() + interval '1 minute', started_at = now() where run_id = ${run.run_id}`;
    let onNotify: (runId: string) => void = () => {};
    const notified = new Promise<string>((resolve) => {
      onNotify = resolve;
    });
    // Resolves once the LISTEN is issued, so the cancel's NOTIFY cannot be missed.
    const listening = await h.database.sql.listen("workcell_run_cancel", (p) => onNotify(p));
    const res = await h.call("POST", `/v1/runs/${run.run_id}/cancel`);
    expect(res.status).toBe(202);
    expect(await jsonOf<Run>(res)).toMatchObject({ status: "running", cancel_requested: true });
    expect(await notified).toBe(run.run_id);
    expect((await h.call("POST", `/v1/runs/${run.run_id}/cancel`)).status).toBe(202);
    await listening.unlisten();
  });

  test("a finished run: 409; another user's run: 404; a body with fields: 400", async () => {
    const { run } = await jsonOf<{ run: Run }>(
      await h.call("POST", "/v1/runs", { body: { input: "x" } }),
    );
    expect((await h.call("POST", `/v1/runs/${run.run_id}/cancel`, { uid: BOB })).status).toBe(404);
    expect(
      (await h.call("POST", `/v1/runs/${run.run_id}/cancel`, { body: { force: true } })).status,
    ).toBe(400);
    await h.database
      .sql`update agent_runs set status = 'succeeded', finished_at = now() where run_id = ${run.run_id}`;
    const res = await h.call("POST", `/v1/runs/${run.run_id}/cancel`);
    expect(res.status).toBe(409);
    expect((await jsonOf<ErrorJson>(res)).error.details?.reason).toBe("run_finished");
    expect((await h.call("POST", `/v1/runs/${crypto.randomUUID()}/cancel`)).status).toBe(404);
  });
});
