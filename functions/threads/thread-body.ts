import type { Thread } from "../../shared/contracts/thread.ts";
import type { Conversation } from "../../shared/db/schema.ts";
import { isoTime } from "../db/iso-time.ts";

/** A thread row with its project's Workdir (the thread has none of its own). */
export type ThreadRecord = {
  readonly thread: Conversation;
  readonly workdirPath: string;
  /** Its runs awaiting approval (listings only; absent or 0: the field is left out). */
  readonly awaitingApproval?: number;
};

export function threadBody({ thread, workdirPath, awaitingApproval }: ThreadRecord): Thread {
  return {
    thread_id: thread.threadId,
    project_id: thread.projectId,
    workdir_path: workdirPath,
    parent_thread_id: thread.parentThreadId,
    title: thread.title,
    status: thread.status,
    created_at: isoTime(thread.createdAt),
    ...(awaitingApproval ? { awaiting_approval: awaitingApproval } : {}),
  };
}
