import type { DbTransaction } from "../../shared/db/client.ts";
import type { Project } from "../../shared/db/schema.ts";
import { domainError } from "../../shared/errors/domain-errors.ts";
import { WorkcellError } from "../../shared/errors/workcell-error.ts";
import { findProject, insertProject } from "../projects/project-store.ts";
import type { ThreadRecord } from "./thread-body.ts";
import { findActiveThread, insertThread } from "./thread-store.ts";

export type NewThreadInput = {
  readonly project_id?: string | undefined;
  readonly title?: string | undefined;
  readonly parent_thread_id?: string | undefined;
};

/**
 * Creates a thread inside the caller's transaction (POST /v1/threads, POST /v1/runs):
 * a child inherits its parent's project and runtime scope root; a root thread without a
 * project gets a new implicit managed project in the same transaction, so a failure
 * leaves neither behind.
 */
export async function createThreadIn(
  tx: DbTransaction,
  uid: string,
  input: NewThreadInput,
): Promise<ThreadRecord> {
  if (input.parent_thread_id !== undefined) {
    const parent = await findActiveThread(tx, uid, input.parent_thread_id, "share");
    if (parent === undefined) {
      throw new WorkcellError("not_found", "No such parent thread.", {
        details: { field: "parent_thread_id" },
      });
    }
    if (input.project_id !== undefined && input.project_id !== parent.thread.projectId) {
      throw domainError("child_project_mismatch", { details: { field: "project_id" } });
    }
    const project = await requireProject(tx, uid, parent.thread.projectId);
    return insertThread(tx, { uid, project, parent: parent.thread, title: input.title });
  }
  const project =
    input.project_id === undefined
      ? await insertProject(tx, { uid, name: input.title, implicit: true })
      : await requireProject(tx, uid, input.project_id);
  return insertThread(tx, { uid, project, title: input.title });
}

async function requireProject(tx: DbTransaction, uid: string, projectId: string): Promise<Project> {
  const project = await findProject(tx, uid, projectId);
  if (project === undefined) {
    throw new WorkcellError("not_found", "No such project.", { details: { field: "project_id" } });
  }
  return project;
}
