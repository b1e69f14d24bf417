import { and, eq } from "drizzle-orm";
import { conversations, projects } from "./schema.ts";

/**
 * The join of a thread (conversations) to its project. The uid is part of the project's
 * key (the schema's composite foreign key), so the join never pairs a thread with another
 * tenant's project.
 */
export function threadProjectJoin() {
  return and(eq(projects.id, conversations.projectId), eq(projects.uid, conversations.uid));
}
