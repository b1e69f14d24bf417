import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CreateQueueCommand, SQSClient } from "@aws-sdk/client-sqs";
import { type FauxqsServer, startFauxqs } from "fauxqs";
import pino from "pino";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createSqsRunQueue } from "../../../functions/queue/sqs-run-queue.ts";
import { SWEEPER_LOCK_KEYS, sweepPendingRuns } from "../../../functions/runs/dispatch-sweeper.ts";
import type { Run } from "../../../shared/contracts/run.ts";
import { createDb } from "../../../shared/db/client.ts";
import {
  type FunctionsHarness,
  jsonOf,
  startFunctionsHarness,
} from "./support/functions-harness.ts";

// Commit, then enqueue: a queue outage during submission must lose no run, and the
// sweeper must deliver each pending run exactly once when the queue is back. The
// global fauxqs is shared by every test file, so this file runs its own instance that
// it can stop and start again (same port, same data directory: the queue survives).

const logger = pino({ level: "silent" });
let fauxqs: FauxqsServer;
let fauxqsDir: string;
let port: number;
let sqs: SQSClient;
let queueUrl: string;
let h: FunctionsHarness;

async function startOwnFauxqs(): Promise<void> {
  fauxqs = await startFauxqs({ port, logger: false, dataDir: fauxqsDir });
  port = fauxqs.port;
}

beforeAll(async () => {
  fauxqsDir = await mkdtemp(join(tmpdir(), "workcell-fauxqs-"));
  port = 0;
  await startOwnFauxqs();
  sqs = new SQSClient({
    endpoint: fauxqs.address,
    region: "us-east-1",
    credentials: { accessKeyId: "test", secretAccessKey: "test" },
    // Fail fast while the queue is down: the sweeper retries on its own schedule.
    maxAttempts: 1,
  });
  const out = await sqs.send(new CreateQueueCommand({ QueueName: "sweeper-runs" }));
  queueUrl = out.QueueUrl ?? "";
  h = await startFunctionsHarness({ sqs, queueUrl, limits: { queueSendTimeoutMs: 1_000 } });
});
afterAll(async () => {
  await h?.close();
  await fauxqs?.stop().catch(() => {});
  await rm(fauxqsDir, { recursive: true, force: true });
});

const sweep = () =>
  sweepPendingRuns({ db: h.db, runQueue: h.deps.runQueue, logger }, AbortSignal.timeout(10_000));

async function submit(input: string): Promise<Run> {
  const res = await h.call("POST", "/v1/runs", { body: { input } });
  expect(res.status).toBe(202);
  return (await jsonOf<{ run: Run }>(res)).run;
}

describe("dispatch sweeper", () => {
  test("queue down during submission: runs stay pending; once it is back each is dispatched exactly once", async () => {
    const before = await submit("before outage");
    expect(await h.drainDispatches()).toEqual([before.run_id]);

    await fauxqs.stop();
    const during: Run[] = [];
    for (let i = 0; i < 5; i++) during.push(await submit(`during outage ${i}`));
    const rows = await h.database.sql<{ status: string; dispatched: boolean }[]>`
      select status, dispatched_at is not null as dispatched from agent_runs
      where run_id in ${h.database.sql(during.map((r) => r.run_id))}`;
    expect(rows).toEqual(Array(5).fill({ status: "pending", dispatched: false }));

    // While the queue is still down, a sweep sends nothing and marks nothing.
    const failedSweep = await sweep();
    expect(failedSweep).toMatchObject({ ran: true, sent: [] });
    expect(failedSweep.ran && failedSweep.failed.length).toBe(5);

    await startOwnFauxqs();
    const result = await sweep();
    expect(result.ran && [...result.sent].sort()).toEqual(during.map((r) => r.run_id).sort());
    expect((await h.drainDispatches()).sort()).toEqual(during.map((r) => r.run_id).sort());

    // Nothing is due any more: a second sweep sends nothing.
    expect(await sweep()).toEqual({ ran: true, sent: [], failed: [] });
    expect(await h.drainDispatches()).toEqual([]);
  });

  test("a run whose dispatch is older than the threshold is re-sent (lost message, crashed submitter)", async () => {
    const lost = await submit("lost message");
    await submit("fresh"); // dispatched just now: not due, must not be re-sent
    await h.drainDispatches();
    await h.database.sql`update agent_runs set dispatched_at = now() - interval '5 minutes'
      where run_id = ${lost.run_id}`;
    const result = await sweep();
    expect(result).toEqual({ ran: true, sent: [lost.run_id], failed: [] });
    expect(await h.drainDispatches()).toEqual([lost.run_id]);
  });

  test("sub-agent runs and runs that are no longer pending are never swept", async () => {
    const parent = await submit("parent");
    const done = await submit("done");
    await h.drainDispatches();
    await h.database
      .sql`update agent_runs set status = 'succeeded', finished_at = now(), dispatched_at = null
      where run_id = ${done.run_id}`;
    await h.database
      .sql`insert into agent_runs (uid, thread_id, parent_run_id, runtime_scope_id, input)
      select uid, thread_id, run_id, runtime_scope_id, 'child' from agent_runs where run_id = ${parent.run_id}`;
    await h.database
      .sql`update agent_runs set dispatched_at = null where run_id = ${parent.run_id}`;
    expect(await sweep()).toEqual({ ran: true, sent: [parent.run_id], failed: [] });
    await h.drainDispatches();
  });

  test("single instance: a sweeper that cannot take the advisory lock does nothing", async () => {
    const run = await submit("locked out");
    await h.database.sql`update agent_runs set dispatched_at = null where run_id = ${run.run_id}`;
    await h.drainDispatches();
    const holder = await h.database.sql.reserve();
    try {
      const [classId, objId] = SWEEPER_LOCK_KEYS;
      await holder`select pg_advisory_lock(${classId}::int, ${objId}::int)`;
      expect(await sweep()).toEqual({ ran: false, reason: "another sweeper holds the lock" });
      expect(await h.drainDispatches()).toEqual([]);
      await holder`select pg_advisory_unlock(${classId}::int, ${objId}::int)`;
    } finally {
      holder.release();
    }
    expect(await sweep()).toEqual({ ran: true, sent: [run.run_id], failed: [] });
    await h.drainDispatches();
  });

  test("8 sweepers on separate connections at once: 120 due runs, each sent exactly once", async () => {
    const runs: Run[] = [];
    for (let i = 0; i < 120; i++) runs.push(await submit(`due ${i}`));
    await h.drainDispatches();
    await h.database.sql`update agent_runs set dispatched_at = null
      where run_id in ${h.database.sql(runs.map((r) => r.run_id))}`;
    const clients = Array.from({ length: 8 }, () =>
      postgres(h.database.url, { max: 1, onnotice: () => {} }),
    );
    try {
      const queue = createSqsRunQueue({ sqs, queueUrl });
      const results = await Promise.all(
        clients.map((sql) =>
          sweepPendingRuns(
            { db: createDb(sql), runQueue: queue, logger },
            AbortSignal.timeout(20_000),
          ),
        ),
      );
      const sent = results.flatMap((r) => (r.ran ? r.sent : []));
      expect(sent.sort()).toEqual(runs.map((r) => r.run_id).sort());
      const delivered = await h.drainDispatches();
      expect(delivered.length).toBe(120);
      expect(new Set(delivered).size).toBe(120);
    } finally {
      await Promise.all(clients.map((sql) => sql.end()));
    }
  });
});
