import { fillPlaceholders } from "drizzle-orm";
import { afterAll, beforeAll, expect, test } from "vitest";
import { SUBMIT_IN_THREAD } from "../../../functions/runs/submit-run.ts";
import { createDb } from "../../../shared/db/client.ts";
import { freshDatabase, type TestDatabase } from "../../support/postgres.ts";
import { seedRun } from "../../unit/db/schema-seed.ts";

// The submission's queued-runs count must read the uid's own pending runs, whatever the
// statistics say. Each connection keeps a generic plan of the statement; with statistics
// taken while nothing was pending (a drained queue, the bench between phases), that plan
// used to scan the sweeper's pending index across every uid (≈ 3,000 buffers and 1.4 ms
// per submission instead of ≈ 100, docs/decisions/0089).
let database: TestDatabase;
beforeAll(async () => {
  database = await freshDatabase({ max: 2 });
});
afterAll(async () => {
  await database?.drop();
});

type PlanNode = { "Index Name"?: string; Plans?: PlanNode[] };

function indexNames(node: PlanNode): string[] {
  const own = node["Index Name"] === undefined ? [] : [node["Index Name"]];
  return [...own, ...(node.Plans ?? []).flatMap(indexNames)];
}

/** A statement parameter as an EXECUTE argument (text, number or NULL). */
function literal(value: unknown): string {
  if (value === null || value === undefined) return "NULL";
  return `'${String(value).replaceAll("'", "''")}'`;
}

test("the generic plan counts through a per-uid index, never the sweeper's", async () => {
  const db = createDb(database.sql);
  // 32 users with a thread and a request each, as many as the bench's clients.
  const users = [];
  for (let i = 0; i < 32; i++) users.push(await seedRun(db));
  const mine = users[0] as (typeof users)[number];
  const runs = (perUser: number) => database.sql`
    insert into agent_runs (uid, thread_id, request_id, runtime_scope_id, input)
    select u.uid, u.thread_id, u.request_id, u.thread_id, 'x'
    from (select uid, thread_id, id as request_id from requests) u, generate_series(1, ${perUser}::int)`;
  // Statistics of a drained queue: runs, none of them pending.
  await runs(12);
  await database.sql`update agent_runs set status = 'cancelled', finished_at = now()`;
  await database.sql`analyze agent_runs`;
  // Then a burst of submissions from every user.
  await runs(90);
  const values = fillPlaceholders(SUBMIT_IN_THREAD.query.params, {
    uid: mine.uid,
    thread_id: mine.thread.threadId,
    max_queued: 200,
    input: "hello",
    idempotency_key: null,
    request_hash: null,
    agent: "{}",
    trace_context: null,
    origin_request_id: null,
  });
  const connection = await database.sql.reserve();
  try {
    await connection.unsafe("set plan_cache_mode = force_generic_plan");
    await connection.unsafe(`prepare submit_probe as ${SUBMIT_IN_THREAD.query.sql}`);
    // EXPLAIN without ANALYZE: planned, never run, so nothing is inserted.
    const [row] = await connection.unsafe<{ "QUERY PLAN": [{ Plan: PlanNode }] }[]>(
      `explain (format json) execute submit_probe(${values.map(literal).join(", ")})`,
    );
    const names = indexNames(row?.["QUERY PLAN"][0].Plan ?? {});
    expect(names).not.toContain("agent_runs_pending_idx");
    expect(
      names.some((n) => n === "agent_runs_pending_uid_idx" || n === "agent_runs_scope_idx"),
    ).toBe(true);
  } finally {
    connection.release();
  }
  const [count] = await database.sql<{ n: number }[]>`
    select count(*)::int as n from agent_runs where uid = ${mine.uid}`;
  // 1 + 12 + 90: the EXPLAIN inserted nothing.
  expect(count?.n).toBe(103);
});
