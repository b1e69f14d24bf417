import { eq, sql } from "drizzle-orm";
import type postgres from "postgres";
import { Registry } from "prom-client";
import { afterEach, beforeEach, expect, it } from "vitest";
import { recordOutcome } from "../../../agent-host/runs/claim/run-recorder.ts";
import { createDb } from "../../../shared/db/client.ts";
import { agentRuns } from "../../../shared/db/schema.ts";
import { createWorkcellMetrics } from "../../../shared/metrics/workcell-metrics.ts";
import { captureLogs } from "../../support/log-capture.ts";
import type { PausableProxy } from "../../support/pausable-proxy.ts";
import { pollUntil } from "../../support/poll-until.ts";
import { proxiedPostgres } from "../../support/proxied-postgres.ts";
import { type RunWorld, runWorld, UID } from "./run-harness.ts";

// Decision 0169: a run that crashes during a PostgreSQL outage (its cause is often the
// outage) wrote its crash record once; that failing too, the run stayed `running` until the
// lease expired and the sweeper ended it `node_lost`. The record is now retried with
// backoff (each attempt bounded, its lease extended by each retry that reaches the
// database) and idempotent: a retry whose earlier try committed writes nothing more. The
// recorder writes through a proxy the test cuts; the run is claimed as the worker's claim
// writes it.

/** The recorder's retries, short so the outage spans several attempts. */
const RETRY = { attemptTimeoutMs: 1_000, maxDelayMs: 300, giveUpAfterMs: 60_000 };
const LEASE_TTL_MS = 6_000;

let world: RunWorld;
let proxy: PausableProxy;
let client: postgres.Sql;
/**
 * Arms the proxy to hold the answer to the run's ending, which is one prepared statement
 * (decision 0183): the answer to its execution (its Bind message, carrying the crash's
 * `internal` error as a parameter) is held, so the statement is applied and its answer lost.
 */
let holdNextEndingReply = false;

beforeEach(async () => {
  world = await runWorld();
  ({ proxy, client } = await proxiedPostgres(world.database.url, {
    pauseReplyTo: (chunk) => {
      const text = chunk.toString("latin1");
      if (!holdNextEndingReply || !text.startsWith("B") || !text.includes('"code":"internal"'))
        return false;
      holdNextEndingReply = false;
      return true;
    },
  }));
});
afterEach(async () => {
  proxy.resume();
  await world.cleanup();
  await client.end({ timeout: 1 }).catch(() => {});
  await proxy.close();
});

/** A run claimed by this test's "node", attempt 1, as claimWaitingRun writes it. */
async function claimedRun() {
  const thread = await world.thread(await world.project());
  const runId = await world.commitRun(thread, "crashes during an outage");
  await world.db
    .update(agentRuns)
    .set({
      status: "running",
      attempt: 1,
      ownerNode: "node-crash",
      leaseExpiresAt: sql`now() + ${LEASE_TTL_MS}::bigint * interval '1 millisecond'`,
      startedAt: sql`now()`,
    })
    .where(eq(agentRuns.runId, runId));
  return world.run(runId);
}

function recordCrash(run: Awaited<ReturnType<typeof claimedRun>>) {
  const { logger, lines } = captureLogs("warn");
  const recorded = recordOutcome(
    createDb(client),
    {
      run,
      fence: { runId: run.runId, uid: UID, attempt: 1 },
      logger,
      metrics: createWorkcellMetrics(new Registry()),
      retry: { policy: RETRY, leaseTtlMs: LEASE_TTL_MS },
    },
    { kind: "crashed" },
  );
  return { recorded, lines };
}

async function completedEvents(runId: string) {
  return (await world.events(runId)).filter((e) => e.type === "run.completed");
}

it("a crash recorded while the database is cut lands once it is back: failed/internal, one run.completed", async () => {
  const run = await claimedRun();
  proxy.cut();
  const { recorded, lines } = recordCrash(run);
  // Several attempts failed while the database was away.
  await pollUntil(() => lines.some((l) => String(l.msg).includes("run crash record")), {
    what: "a failed attempt of the crash record",
  });
  expect((await world.run(run.runId)).status).toBe("running");
  proxy.resume();

  expect(await recorded).toMatchObject({ kind: "ended", ending: { status: "failed" } });
  const row = await world.run(run.runId);
  expect(row.status).toBe("failed");
  expect(row.error?.code).toBe("internal");
  expect(await completedEvents(run.runId)).toHaveLength(1);
});

it("a crash record whose answer was lost is not written twice", async () => {
  const run = await claimedRun();
  holdNextEndingReply = true;
  const { recorded } = recordCrash(run);
  // The record's statement applied; its answer is held, then the connection goes.
  await pollUntil(() => proxy.stopped, { what: "the ending's answer held" });
  await pollUntil(async () => (await world.run(run.runId)).status === "failed", {
    what: "the crash record committed",
  });
  proxy.cut();
  proxy.resume();

  // The retry finds this attempt's own ending and writes nothing more.
  expect(await recorded).toMatchObject({ kind: "ended", ending: { status: "failed" } });
  expect((await world.run(run.runId)).error?.code).toBe("internal");
  expect(await completedEvents(run.runId)).toHaveLength(1);
});
