import { expect, test } from "vitest";
import type { Thread } from "../../../shared/contracts/thread.ts";
import { BOB, type ErrorJson, jsonOf } from "./support/functions-harness.ts";
import { functionsHarnessForFile } from "./support/functions-harness-for-file.ts";

// The bound on a uid's queued (pending) runs: past it a submission is 429 with
// Retry-After and writes nothing (docs/decisions/0037).

const MAX = 3;
const h = functionsHarnessForFile({
  limits: { maxQueuedRunsPerUid: MAX, queuedRunsRetryAfterSeconds: 7 },
});

async function rows(uid: string) {
  const [row] = await h.database.sql<{ runs: number; messages: number; threads: number }[]>`
    select (select count(*)::int from agent_runs where uid = ${uid}) as runs,
           (select count(*)::int from messages where uid = ${uid}) as messages,
           (select count(*)::int from conversations where uid = ${uid}) as threads`;
  return row;
}

test("a submission past the queued-runs bound is 429 with Retry-After; nothing is written or sent", async () => {
  await h.drainDispatches();
  const thread = await jsonOf<Thread>(await h.call("POST", "/v1/threads", { body: {} }));
  for (let i = 0; i < MAX; i++) {
    const ok = await h.call("POST", `/v1/threads/${thread.thread_id}/runs`, {
      body: { input: `run ${i}` },
    });
    expect(ok.status).toBe(202);
  }
  expect(await h.drainDispatches()).toHaveLength(MAX);
  const before = await rows("alice");

  const refused = await h.call("POST", `/v1/threads/${thread.thread_id}/runs`, {
    body: { input: "one too many" },
  });
  expect(refused.status).toBe(429);
  expect(refused.headers.get("retry-after")).toBe("7");
  const body = await jsonOf<ErrorJson>(refused);
  expect(body.error).toMatchObject({
    code: "rate_limited",
    details: { reason: "queued_runs_limit", max_queued_runs: MAX },
  });
  // A new thread is refused too, and its thread (and implicit project) rolled back.
  const newThread = await h.call("POST", "/v1/runs", { body: { input: "in a new thread" } });
  expect(newThread.status).toBe(429);
  expect(await rows("alice")).toEqual(before);
  expect(await h.drainDispatches()).toEqual([]);

  // Another user is unaffected.
  const bobThread = await jsonOf<Thread>(
    await h.call("POST", "/v1/threads", { body: {}, uid: BOB }),
  );
  const bob = await h.call("POST", `/v1/threads/${bobThread.thread_id}/runs`, {
    body: { input: "bob's run" },
    uid: BOB,
  });
  expect(bob.status).toBe(202);

  // Once one of alice's runs is no longer pending, she may submit again.
  await h.database.sql`
    update agent_runs set status = 'cancelled', finished_at = now()
    where run_id = (select run_id from agent_runs where uid = 'alice' order by created_at limit 1)`;
  const again = await h.call("POST", `/v1/threads/${thread.thread_id}/runs`, {
    body: { input: "after one ended" },
  });
  expect(again.status).toBe(202);
  // An unknown thread is still 404, not 429, while under the bound.
  const unknown = await h.call("POST", `/v1/threads/${crypto.randomUUID()}/runs`, {
    body: { input: "x" },
    uid: BOB,
  });
  expect(unknown.status).toBe(404);
});
