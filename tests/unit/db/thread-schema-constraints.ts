import { randomUUID } from "node:crypto";
import { test } from "vitest";
import type { Db } from "../../../shared/db/client.ts";
import {
  agentRuns,
  attachments,
  conversations,
  messages,
  projects,
} from "../../../shared/db/schema.ts";
import { CHECK, expectViolation, FOREIGN_KEY } from "./expect-violation.ts";
import { managedPath, one, seedRun } from "./schema-seed.ts";

// Threads across tenants and trees: references never cross a uid, a project or a runtime scope.
export function defineThreadConstraintTests(getDb: () => Db): void {
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
}
