import { randomUUID } from "node:crypto";
import type { Db } from "../../../shared/db/client.ts";
import {
  agentRuns,
  conversations,
  messages,
  projects,
  requests,
} from "../../../shared/db/schema.ts";

// The single row a RETURNING query produced.
export function one<T>(rows: T[]): T {
  const [row] = rows;
  if (row === undefined) throw new Error("expected the query to return a row");
  return row;
}

// A managed Workdir path no other test uses.
export function managedPath(): string {
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
