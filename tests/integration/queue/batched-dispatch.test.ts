import { spawn } from "node:child_process";
import { join } from "node:path";
import type { SQSClient } from "@aws-sdk/client-sqs";
import { eq } from "drizzle-orm";
import pino from "pino";
import { afterEach, beforeEach, expect, it } from "vitest";
import { createBatchingRunQueue } from "../../../functions/queue/batching-run-queue.ts";
import { createSqsRunQueue } from "../../../functions/queue/sqs-run-queue.ts";
import { sweepPendingRuns } from "../../../functions/runs/dispatch-sweeper.ts";
import { createDb, type Db } from "../../../shared/db/client.ts";
import { agentRuns } from "../../../shared/db/schema.ts";
import { awsConfig, freshQueue, sqsClient } from "../../support/aws.ts";
import { drainRunIds as drainShared } from "../../support/drain-run-ids.ts";
import { pollFor } from "../../support/poll-until.ts";
import { freshDatabase, type TestDatabase } from "../../support/postgres.ts";

// Micro-batched run dispatch (functions/queue/batching-run-queue.ts, decision 0030):
// the same guarantees as one send per run, fewer SQS round trips.

let database: TestDatabase;
let db: Db;
let sqs: SQSClient;
let queueUrl: string;

beforeEach(async () => {
  database = await freshDatabase();
  db = createDb(database.sql);
  sqs = sqsClient();
  queueUrl = await freshQueue(sqs, "batch");
});
afterEach(async () => {
  sqs.destroy();
  await database.drop();
});

const drainRunIds = () => drainShared(sqs, queueUrl);

it("concurrent dispatches share batches and each resolves once its message is on the queue", async () => {
  const sends: number[] = [];
  const inner = createSqsRunQueue({ sqs, queueUrl });
  const counted = {
    ...inner,
    dispatchRuns: (ids: readonly string[], signal: AbortSignal) => {
      sends.push(ids.length);
      return inner.dispatchRuns(ids, signal);
    },
  };
  const queue = createBatchingRunQueue(counted, { lingerMs: 5 });
  const ids = Array.from(
    { length: 25 },
    (_, i) => `00000000-0000-4000-8000-${String(i).padStart(12, "0")}`,
  );
  await Promise.all(ids.map((id) => queue.dispatchRun(id, AbortSignal.timeout(10_000))));
  expect((await drainRunIds()).sort()).toEqual([...ids].sort());
  // 25 dispatches in one tick: two full batches, then the rest after the linger.
  expect(sends).toEqual([10, 10, 5]);
});

it("a dispatch aborted before the flush leaves the batch and is never sent", async () => {
  const queue = createBatchingRunQueue(createSqsRunQueue({ sqs, queueUrl }), { lingerMs: 50 });
  const aborted = new AbortController();
  const gone = queue.dispatchRun("00000000-0000-4000-8000-00000000000a", aborted.signal);
  const kept = queue.dispatchRun(
    "00000000-0000-4000-8000-00000000000b",
    AbortSignal.timeout(10_000),
  );
  aborted.abort(new Error("client gave up"));
  await expect(gone).rejects.toThrow("client gave up");
  await kept;
  expect(await drainRunIds()).toEqual(["00000000-0000-4000-8000-00000000000b"]);
});

it("a batch the queue refuses rejects every dispatch in it (the submitter hands it to the sweeper)", async () => {
  const queue = createBatchingRunQueue(
    createSqsRunQueue({ sqs, queueUrl: `${queueUrl}-does-not-exist` }),
    { lingerMs: 1 },
  );
  const results = await Promise.allSettled(
    ["a", "b", "c"].map((s) =>
      queue.dispatchRun(`00000000-0000-4000-8000-00000000000${s}`, AbortSignal.timeout(10_000)),
    ),
  );
  expect(results.map((r) => r.status)).toEqual(["rejected", "rejected", "rejected"]);
  expect(await drainRunIds()).toEqual([]);
});

it("killed between commit and flush: the sweeper dispatches every committed run exactly once", async () => {
  const count = 7;
  const child = spawn(
    process.execPath,
    [
      join(import.meta.dirname, "batched-dispatch-child.ts"),
      JSON.stringify({
        dbUrl: database.url,
        endpoint: awsConfig().endpoint,
        queueUrl,
        uid: "batch-user",
        count,
      }),
    ],
    { stdio: ["ignore", "inherit", "inherit"] },
  );
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  try {
    // Wait until every run is committed (the child then waits forever for its flush).
    await pollFor(
      async () => (await db.select().from(agentRuns).where(eq(agentRuns.uid, "batch-user"))).length,
      (committed) => committed === count,
      {
        what: `${count} committed runs`,
        timeoutMs: 30_000,
        intervalMs: 20,
        detail: (committed) => `only ${committed} runs committed`,
      },
    );
  } finally {
    child.kill("SIGKILL");
    await exited;
  }
  // Nothing reached the queue: the batch died with the process.
  expect(await drainRunIds()).toEqual([]);

  const committed = (await db.select().from(agentRuns).where(eq(agentRuns.uid, "batch-user")))
    .map((r) => r.runId)
    .sort();
  const runQueue = createSqsRunQueue({ sqs, queueUrl });
  const logger = pino({ level: "silent" });
  // Their dispatch stamp is due at once with a 1 ms threshold; a second, ordinary sweep
  // (60 s threshold) finds nothing more to send.
  const first = await sweepPendingRuns(
    { db, runQueue, logger, limits: { redispatchAfterMs: 1 } },
    AbortSignal.timeout(10_000),
  );
  const second = await sweepPendingRuns({ db, runQueue, logger }, AbortSignal.timeout(10_000));
  expect(first.ran && [...first.sent].sort()).toEqual(committed);
  expect(second.ran && second.sent).toEqual([]);
  const delivered = await drainRunIds();
  expect(delivered.sort()).toEqual(committed);
});
