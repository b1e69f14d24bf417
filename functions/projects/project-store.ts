import { and, desc, eq } from "drizzle-orm";
import type { DbOrTransaction } from "../../shared/db/client.ts";
import { type DirectoryMode, type Project, projects } from "../../shared/db/schema.ts";
import { newManagedWorkdirPath } from "../../shared/paths/managed-workdir-path.ts";

/** Name of a project created without one: a linked project is named after its directory. */
export const UNNAMED_MANAGED_PROJECT = "Untitled project";

export type NewProjectInput = {
  uid: string;
  name: string | undefined;
  /** Canonical path for a linked project; omitted for a managed one (server-generated). */
  workdirPath?: string;
  implicit?: boolean;
};

export async function insertProject(db: DbOrTransaction, input: NewProjectInput): Promise<Project> {
  const mode: DirectoryMode = input.workdirPath === undefined ? "managed" : "linked";
  const workdirPath = input.workdirPath ?? newManagedWorkdirPath();
  const [row] = await db
    .insert(projects)
    .values({
      uid: input.uid,
      name: input.name ?? defaultName(mode, workdirPath),
      workdirPath,
      directoryMode: mode,
      implicit: input.implicit ?? false,
    })
    .returning();
  if (row === undefined) throw new Error("insert into projects returned no row");
  return row;
}

/** The caller's project, or undefined: another uid's project is indistinguishable from none. */
export async function findProject(
  db: DbOrTransaction,
  uid: string,
  id: string,
): Promise<Project | undefined> {
  const [row] = await db
    .select()
    .from(projects)
    .where(and(eq(projects.id, id), eq(projects.uid, uid)));
  return row;
}

export async function listProjects(db: DbOrTransaction, uid: string): Promise<Project[]> {
  return db
    .select()
    .from(projects)
    .where(eq(projects.uid, uid))
    .orderBy(desc(projects.createdAt), desc(projects.id));
}

function defaultName(mode: DirectoryMode, workdirPath: string): string {
  if (mode === "managed") return UNNAMED_MANAGED_PROJECT;
  return workdirPath.slice(workdirPath.lastIndexOf("/") + 1);
}
