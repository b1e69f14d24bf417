import { randomUUID } from "node:crypto";
import { and, eq, sql } from "drizzle-orm";
import { expect, test } from "vitest";
import type { Db } from "../../../shared/db/client.ts";
import {
  constraintOf,
  PG_CHECK_VIOLATION,
  PG_FOREIGN_KEY_VIOLATION,
  PG_UNIQUE_VIOLATION,
  sqlStateOf,
} from "../../../shared/db/pg-error.ts";
import {
  agentRuns,
  attachments,
  conversations,
  idempotencyKeys,
  messages,
  nextSandboxGeneration,
  nodes,
  projects,
  requests,
  runEvents,
  sandboxes,
  skillGrants,
  skills,
} from "../../../shared/db/schema.ts";

// The schema's invariants, run against PGlite (unit) and a real PostgreSQL
// (integration) through the same drizzle code, so both engines are held to one contract.

export async function expectViolation(
  query: PromiseLike<unknown>,
  code: string,
  constraint: string,
): Promise<void> {
  const error = await Promise.resolve(query).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error, `expected ${constraint} to reject the row`).toBeDefined();
  expect({ code: sqlStateOf(error), constraint: constraintOf(error) }).toEqual({
    code,
    constraint,
  });
}

const UNIQUE = PG_UNIQUE_VIOLATION;
const FOREIGN_KEY = PG_FOREIGN_KEY_VIOLATION;
const CHECK = PG_CHECK_VIOLATION;

// The single row a RETURNING query produced.
export function one<T>(rows: T[]): T {
  const [row] = rows;
  if (row === undefined) throw new Error("expected the query to return a row");
  return row;
}

function managedPath(): string {
  return `projects/${randomUUID()}`;
}

// project + root thread + user message + request + pending run, all for `uid`.
export async function seedRun(db: Db, uid = `user-${randomUUID()}`) {
  const project = one(
    await db
      .insert(projects)
      .values({ uid, name: "p", workdirPath: managedPath(), directoryMode: "managed" })
      .returning(),
  );
  const threadId = randomUUID();
  const thread = one(
    await db
      .insert(conversations)
      .values({ threadId, uid, projectId: project.id, rootThreadId: threadId, title: "t" })
      .returning(),
  );
  const message = one(
    await db.insert(messages).values({ uid, threadId, role: "user", content: "hello" }).returning(),
  );
  const request = one(
    await db
      .insert(requests)
      .values({ uid, threadId, messageId: message.id, requestHash: "h1" })
      .returning(),
  );
  const run = one(
    await db
      .insert(agentRuns)
      .values({ uid, threadId, requestId: request.id, runtimeScopeId: threadId, input: "hello" })
      .returning(),
  );
  return { uid, project, thread, message, request, run };
}

// Registers the shared tests; `getDb` is called inside each test (after beforeAll).
export function defineSchemaConstraintTests(getDb: () => Db): void {
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

  test("tenant-crossing references are rejected", async () => {
    const db = getDb();
    const a = await seedRun(db);
    const b = await seedRun(db);
    // uid B's thread in uid A's project.
    const threadId = randomUUID();
    await expectViolation(
      db.insert(conversations).values({
        threadId,
        uid: b.uid,
        projectId: a.project.id,
        rootThreadId: threadId,
      }),
      FOREIGN_KEY,
      "conversations_project_fk",
    );
    await expectViolation(
      db
        .insert(messages)
        .values({ uid: b.uid, threadId: a.thread.threadId, role: "user", content: "x" }),
      FOREIGN_KEY,
      "messages_thread_fk",
    );
    // A run of A's thread pointing at B's request.
    await expectViolation(
      db.insert(agentRuns).values({
        uid: a.uid,
        threadId: a.thread.threadId,
        requestId: b.request.id,
        runtimeScopeId: a.thread.threadId,
        input: "x",
      }),
      FOREIGN_KEY,
      "agent_runs_request_fk",
    );
    await expectViolation(
      db.insert(attachments).values({
        fileId: randomUUID(),
        uid: b.uid,
        threadId: a.thread.threadId,
        fileName: "a.txt",
        contentType: "text/plain",
        size: 1,
        path: "uploads/a.txt",
        originalPath: "uploads/a.txt",
      }),
      FOREIGN_KEY,
      "attachments_thread_fk",
    );
  });

  test("thread trees and runtime scopes stay consistent", async () => {
    const db = getDb();
    const { uid, project, thread, run } = await seedRun(db);
    const childId = randomUUID();
    await db.insert(conversations).values({
      threadId: childId,
      uid,
      projectId: project.id,
      parentThreadId: thread.threadId,
      rootThreadId: thread.threadId,
    });
    // A child naming itself as root, or a root naming another root.
    const orphanId = randomUUID();
    await expectViolation(
      db.insert(conversations).values({
        threadId: orphanId,
        uid,
        projectId: project.id,
        parentThreadId: thread.threadId,
        rootThreadId: orphanId,
      }),
      CHECK,
      "conversations_root_check",
    );
    // A child in another project than its parent.
    const other = one(
      await db
        .insert(projects)
        .values({ uid, name: "other", workdirPath: managedPath(), directoryMode: "managed" })
        .returning(),
    );
    await expectViolation(
      db.insert(conversations).values({
        threadId: randomUUID(),
        uid,
        projectId: other.id,
        parentThreadId: thread.threadId,
        rootThreadId: thread.threadId,
      }),
      FOREIGN_KEY,
      "conversations_parent_fk",
    );
    // A sub-agent run in the child thread inherits the root scope...
    await db.insert(agentRuns).values({
      uid,
      threadId: childId,
      parentRunId: run.runId,
      runtimeScopeId: thread.threadId,
      input: "sub",
    });
    // ...and any other scope is refused, through the thread and through the parent run.
    await expectViolation(
      db.insert(agentRuns).values({
        uid,
        threadId: childId,
        parentRunId: run.runId,
        runtimeScopeId: childId,
        input: "sub",
      }),
      FOREIGN_KEY,
      "agent_runs_thread_fk",
    );
    // A root run needs the request that produced it.
    await expectViolation(
      db
        .insert(agentRuns)
        .values({ uid, threadId: thread.threadId, runtimeScopeId: thread.threadId, input: "x" }),
      CHECK,
      "agent_runs_request_check",
    );
  });

  test("projects: managed paths are canonical and unique, linked paths may repeat", async () => {
    const db = getDb();
    const uid = `user-${randomUUID()}`;
    const path = managedPath();
    await db
      .insert(projects)
      .values({ uid, name: "a", workdirPath: path, directoryMode: "managed" });
    await expectViolation(
      db.insert(projects).values({ uid, name: "b", workdirPath: path, directoryMode: "managed" }),
      UNIQUE,
      "projects_managed_workdir_key",
    );
    // Another user's managed dir with the same relative path lives in another workspace.
    await db
      .insert(projects)
      .values({ uid: `${uid}-2`, name: "c", workdirPath: path, directoryMode: "managed" });
    for (const name of ["l1", "l2"]) {
      await db.insert(projects).values({ uid, name, workdirPath: path, directoryMode: "linked" });
      await db
        .insert(projects)
        .values({ uid, name, workdirPath: "code/app", directoryMode: "linked" });
    }
    await expectViolation(
      db
        .insert(projects)
        .values({ uid, name: "x", workdirPath: path.toUpperCase(), directoryMode: "managed" }),
      CHECK,
      "projects_managed_path_check",
    );
    for (const bad of ["", "/abs", "a/../b", "a//b", "a/", ".", "a/./b", "a\\b", "s3://x"]) {
      await expectViolation(
        db.insert(projects).values({ uid, name: "x", workdirPath: bad, directoryMode: "linked" }),
        CHECK,
        "projects_workdir_path_check",
      );
    }
    await expectViolation(
      db.execute(
        sql`insert into projects (uid, name, workdir_path, directory_mode) values (${uid}, 'x', 'code', 'copied')`,
      ),
      CHECK,
      "projects_directory_mode_check",
    );
  });

  test("idempotency keys are unique per uid; requests without a key never clash", async () => {
    const db = getDb();
    const { uid, thread, message } = await seedRun(db);
    const base = { uid, threadId: thread.threadId, messageId: message.id, requestHash: "h" };
    await db.insert(requests).values({ ...base, idempotencyKey: "k1" });
    await expectViolation(
      db.insert(requests).values({ ...base, idempotencyKey: "k1" }),
      UNIQUE,
      "requests_uid_idempotency_key_key",
    );
    await db.insert(requests).values({ ...base });
    await db.insert(requests).values({ ...base });

    await db
      .insert(idempotencyKeys)
      .values({ uid, key: "k1", method: "POST", path: "/v1/projects", requestHash: "h" });
    await expectViolation(
      db
        .insert(idempotencyKeys)
        .values({ uid, key: "k1", method: "POST", path: "/v1/projects", requestHash: "h" }),
      UNIQUE,
      "idempotency_keys_pkey",
    );
    await expectViolation(
      db
        .update(idempotencyKeys)
        .set({ responseStatus: 201 })
        .where(and(eq(idempotencyKeys.uid, uid), eq(idempotencyKeys.key, "k1"))),
      CHECK,
      "idempotency_keys_response_check",
    );
  });

  test("skills: grants cascade with the skill; slugs are one safe path component", async () => {
    const db = getDb();
    const slug = `s-${randomUUID()}`;
    await db.insert(skills).values({ slug, kind: "shared", contentHash: "c1" });
    await db.insert(skillGrants).values([
      { uid: "u1", slug },
      { uid: "u2", slug },
    ]);
    await expectViolation(
      db.insert(skillGrants).values({ uid: "u1", slug }),
      UNIQUE,
      "skill_grants_pkey",
    );
    await db.delete(skills).where(eq(skills.slug, slug));
    expect(await db.select().from(skillGrants).where(eq(skillGrants.slug, slug))).toEqual([]);
    for (const bad of ["..", ".hidden", "a/b", "-x", ""]) {
      await expectViolation(
        db.insert(skills).values({ slug: bad, kind: "shared", contentHash: "c" }),
        CHECK,
        "skills_slug_check",
      );
    }
  });

  test("sandboxes: generations only grow and a stale compare-and-set matches nothing", async () => {
    const db = getDb();
    const nodeId = `node-${randomUUID()}`;
    await db.insert(nodes).values({ nodeId, dataPlaneUrl: "http://127.0.0.1:1" });
    const sandboxId = randomUUID().replaceAll("-", "").slice(0, 12);
    const identity = {
      sandboxId,
      uid: "u",
      runtimeScopeId: randomUUID(),
      workdirPath: managedPath(),
      nodeId,
    };
    const first = one(
      await db.insert(sandboxes).values(identity).onConflictDoNothing().returning(),
    );
    expect(first.generation).toBeGreaterThanOrEqual(1);
    // A second first-create loses the race: no row, no new generation.
    expect(await db.insert(sandboxes).values(identity).onConflictDoNothing().returning()).toEqual(
      [],
    );

    const recreate = (observed: number) =>
      db
        .update(sandboxes)
        .set({ generation: nextSandboxGeneration(), state: "creating" })
        .where(and(eq(sandboxes.sandboxId, sandboxId), eq(sandboxes.generation, observed)))
        .returning({ generation: sandboxes.generation });
    const second = one(await recreate(first.generation));
    expect(second.generation).toBeGreaterThan(first.generation);
    expect(await recreate(first.generation)).toEqual([]);

    await expectViolation(
      db.insert(sandboxes).values({ ...identity, sandboxId: "NOT-HEX-1234" }),
      CHECK,
      "sandboxes_id_check",
    );
    await expectViolation(
      db.insert(sandboxes).values({ ...identity, sandboxId: "0123456789ab" }),
      UNIQUE,
      "sandboxes_uid_scope_key",
    );
    await expectViolation(
      db.insert(sandboxes).values({
        ...identity,
        sandboxId: "0123456789ab",
        runtimeScopeId: randomUUID(),
        nodeId: "ghost",
      }),
      FOREIGN_KEY,
      "sandboxes_node_fk",
    );
  });
}
