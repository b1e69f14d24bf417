import { and, eq, sql } from "drizzle-orm";
import { expect, test } from "vitest";
import type { Db } from "../../../shared/db/client.ts";
import { agentRuns, conversations, runEvents } from "../../../shared/db/schema.ts";
import { CHECK, expectViolation, FOREIGN_KEY, UNIQUE } from "./expect-violation.ts";
import { seedRun } from "./schema-seed.ts";

// Runs and their events: the state machine's checks and the event chain.
export function defineRunConstraintTests(getDb: () => Db): void {
  test("a project, thread, run and its events round-trip", async () => {
    const db = getDb();
    const { uid, run, thread } = await seedRun(db);
    expect(run.status).toBe("pending");
    expect(run.attempt).toBe(0);
    expect(run.cancelRequested).toBe(false);
    expect(run.agent).toEqual({});
    expect(run.createdAt).toBeInstanceOf(Date);
    expect(thread.status).toBe("active");

    for (const seq of [1, 2, 3]) {
      await db
        .insert(runEvents)
        .values({ runId: run.runId, uid, seq, type: "delta", data: { seq } });
    }
    const events = await db
      .select()
      .from(runEvents)
      .where(eq(runEvents.runId, run.runId))
      .orderBy(runEvents.seq);
    expect(events.map((e) => [e.seq, e.prevSeq, e.data])).toEqual([
      [1, null, { seq: 1 }],
      [2, 1, { seq: 2 }],
      [3, 2, { seq: 3 }],
    ]);

    // Claim, then finish: the state transitions the checks allow.
    const [claimed] = await db
      .update(agentRuns)
      .set({
        status: "running",
        attempt: sql`${agentRuns.attempt} + 1`,
        ownerNode: "node-a",
        leaseExpiresAt: new Date(Date.now() + 30_000),
        startedAt: new Date(),
      })
      .where(and(eq(agentRuns.runId, run.runId), eq(agentRuns.attempt, 0)))
      .returning();
    expect(claimed?.attempt).toBe(1);
    await db
      .update(agentRuns)
      .set({
        status: "failed",
        error: { code: "boom", message: "it broke" },
        finishedAt: new Date(),
      })
      .where(eq(agentRuns.runId, run.runId));
  });

  test("run events: duplicate seq and gaps are rejected", async () => {
    const db = getDb();
    const { uid, run } = await seedRun(db);
    await db.insert(runEvents).values({ runId: run.runId, uid, seq: 1, type: "start" });
    await expectViolation(
      db.insert(runEvents).values({ runId: run.runId, uid, seq: 1, type: "again" }),
      UNIQUE,
      "run_events_pkey",
    );
    await expectViolation(
      db.insert(runEvents).values({ runId: run.runId, uid, seq: 3, type: "gap" }),
      FOREIGN_KEY,
      "run_events_prev_fk",
    );
    await expectViolation(
      db.insert(runEvents).values({ runId: run.runId, uid, seq: 0, type: "zero" }),
      CHECK,
      "run_events_seq_check",
    );
    // An event of another tenant's run.
    await expectViolation(
      db.insert(runEvents).values({ runId: run.runId, uid: "someone-else", seq: 2, type: "x" }),
      FOREIGN_KEY,
      "run_events_run_fk",
    );
  });

  test("enumerations and state checks reject bad values", async () => {
    const db = getDb();
    const { run, thread } = await seedRun(db);
    await expectViolation(
      db.execute(sql`update agent_runs set status = 'exploded' where run_id = ${run.runId}`),
      CHECK,
      "agent_runs_status_check",
    );
    await expectViolation(
      db.execute(
        sql`update conversations set status = 'gone' where thread_id = ${thread.threadId}`,
      ),
      CHECK,
      "conversations_status_check",
    );
    // deleted_at and status move together.
    await expectViolation(
      db
        .update(conversations)
        .set({ deletedAt: new Date() })
        .where(eq(conversations.threadId, thread.threadId)),
      CHECK,
      "conversations_deleted_check",
    );
    await db
      .update(conversations)
      .set({ status: "deleted", deletedAt: new Date() })
      .where(eq(conversations.threadId, thread.threadId));
    // A running run without an owner or lease could never be recovered.
    await expectViolation(
      db
        .update(agentRuns)
        .set({ status: "running", startedAt: new Date() })
        .where(eq(agentRuns.runId, run.runId)),
      CHECK,
      "agent_runs_running_check",
    );
    await expectViolation(
      db
        .update(agentRuns)
        .set({ status: "failed", finishedAt: new Date() })
        .where(eq(agentRuns.runId, run.runId)),
      CHECK,
      "agent_runs_failed_error_check",
    );
    await expectViolation(
      db.update(agentRuns).set({ status: "succeeded" }).where(eq(agentRuns.runId, run.runId)),
      CHECK,
      "agent_runs_finished_check",
    );
    await expectViolation(
      db.execute(
        sql`update agent_runs set error = '{"code": 1}'::jsonb where run_id = ${run.runId}`,
      ),
      CHECK,
      "agent_runs_error_check",
    );
  });
}
