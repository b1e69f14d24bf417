import { and, desc, eq, inArray, lt } from "drizzle-orm";
import { type AgentOptions, agentOptionsSchema } from "../../../shared/contracts/run.ts";
import type { DbOrTransaction } from "../../../shared/db/client.ts";
import {
  type AgentRun,
  conversations,
  type DirectoryMode,
  messages,
  projects,
} from "../../../shared/db/schema.ts";
import { skillGrantVersionSql } from "../../../shared/db/skill-grant-version.ts";
import { threadProjectJoin } from "../../../shared/db/thread-project-join.ts";
import { WorkcellError } from "../../../shared/errors/workcell-error.ts";
import type { ContextAttachment } from "../../attachments/attachment-context.ts";
import { listThreadAttachments } from "../../attachments/list-thread-attachments.ts";
import type { ChatMessage } from "../agent/index.ts";

/** Everything about a claimed run the worker reads once, before it prepares it. */
export interface RunContext {
  readonly run: AgentRun;
  readonly projectId: string;
  /** Canonical Workdir path of the run's project. */
  readonly workdirPath: string;
  readonly directoryMode: DirectoryMode;
  /** The run's agent options; unreadable ones are ignored (the API validated them). */
  readonly agent: AgentOptions;
  /** The thread before this run: user and assistant messages, oldest first. */
  readonly history: readonly ChatMessage[];
  /**
   * The thread's attachments as the run starts (Workdir-relative paths), oldest first, the
   * newest MAX_CONTEXT_ATTACHMENT_ROWS at most; withAttachmentContext lists them for the
   * model (docs/decisions/0009-attachments.md §6).
   */
  readonly attachments: readonly ContextAttachment[];
  /**
   * The uid's skill grant version as the run starts (shared/db/skill-grant-version.ts):
   * prepareRun skips the projection refresh when it is the last ok refresh's version.
   */
  readonly skillGrantVersion: string;
}

export async function loadRunContext(
  db: DbOrTransaction,
  run: AgentRun,
  limits: { readonly maxHistoryMessages: number },
): Promise<RunContext> {
  // Three independent reads, sent together: they overlap on the pool's connections. Each
  // is a named statement (fixed text, values as parameters): parsed and planned once per
  // connection and one round trip, not two (docs/decisions/0087, 0183).
  const [[place], newestFirst, files] = await Promise.all([
    db
      .select({
        projectId: projects.id,
        workdirPath: projects.workdirPath,
        directoryMode: projects.directoryMode,
        // Read here, the run's last statement before its preparation, so that a grant
        // change committed before the run started is seen by it (decision 0075).
        skillGrantVersion: skillGrantVersionSql(run.uid),
      })
      .from(conversations)
      .innerJoin(projects, threadProjectJoin())
      .where(and(eq(conversations.threadId, run.threadId), eq(conversations.uid, run.uid)))
      .prepare("run_context_place")
      .execute(),
    // Strictly before the run: the run's own user message was inserted in the run's
    // transaction (same now()), and it is passed separately as the run's input.
    db
      .select({ role: messages.role, content: messages.content })
      .from(messages)
      .where(
        and(
          eq(messages.threadId, run.threadId),
          eq(messages.uid, run.uid),
          lt(messages.createdAt, run.createdAt),
          inArray(messages.role, ["user", "assistant"]),
        ),
      )
      .orderBy(desc(messages.createdAt), desc(messages.id))
      .limit(limits.maxHistoryMessages)
      .prepare("run_context_history")
      .execute(),
    listThreadAttachments(db, run.uid, run.threadId),
  ]);
  if (place === undefined) {
    // The composite foreign keys make this impossible short of a manual delete.
    throw new WorkcellError("internal", "The run's thread or project is missing.", {
      details: { reason: "thread_missing" },
    });
  }

  const history: ChatMessage[] = newestFirst
    .reverse()
    .map((m) =>
      m.role === "assistant"
        ? { role: "assistant", content: m.content, toolCalls: [] }
        : { role: "user", content: m.content },
    );

  const agent = agentOptionsSchema.safeParse(run.agent);
  return {
    run,
    projectId: place.projectId,
    workdirPath: place.workdirPath,
    directoryMode: place.directoryMode,
    agent: agent.success ? agent.data : {},
    history,
    attachments: files,
    skillGrantVersion: place.skillGrantVersion,
  };
}
