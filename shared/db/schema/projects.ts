import { sql } from "drizzle-orm";
import {
  boolean,
  check,
  index,
  pgTable,
  text,
  unique,
  uniqueIndex,
  uuid,
} from "drizzle-orm/pg-core";
import { createdAt, enumCheck, workdirPathCheck } from "./columns.ts";

export const DIRECTORY_MODES = ["managed", "linked"] as const;
export type DirectoryMode = (typeof DIRECTORY_MODES)[number];

// A project binds a name to a Workdir inside the owner's UserWorkspace.
//
// Uniqueness of workdir_path: only managed projects are unique per (uid, workdir_path).
// A managed directory (`projects/<uuid>`) is created for, and owned by, exactly one
// project, so a second managed row for it is always a bug. Linked projects may point at
// the same directory as each other or as a managed project: a Workdir is a cwd and a
// file view, not an isolation boundary (runtimes are isolated per root thread, not per
// directory), so refusing a second link would only surprise the user.
export const projects = pgTable(
  "projects",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    uid: text("uid").notNull(),
    name: text("name").notNull(),
    workdirPath: text("workdir_path").notNull(),
    directoryMode: text("directory_mode", { enum: DIRECTORY_MODES }).notNull(),
    // Created on the fly by POST /v1/threads or /v1/runs without a project_id.
    implicit: boolean("implicit").notNull().default(false),
    createdAt: createdAt(),
  },
  (t) => [
    // Target of the tenant-safe composite foreign keys: a child row naming this project
    // must also carry the project's uid, so no row can cross tenants.
    unique("projects_id_uid_key").on(t.id, t.uid),
    uniqueIndex("projects_managed_workdir_key")
      .on(t.uid, t.workdirPath)
      .where(sql`${t.directoryMode} = 'managed'`),
    // GET /v1/projects (ascending: serves both sort directions, see conversations).
    index("projects_uid_created_idx").on(t.uid, t.createdAt, t.id),
    enumCheck("projects_directory_mode_check", t.directoryMode, DIRECTORY_MODES),
    workdirPathCheck("projects_workdir_path_check", t.workdirPath),
    // Managed paths are server-generated and canonical (lowercase hyphenated uuid).
    check(
      "projects_managed_path_check",
      sql`${t.directoryMode} <> 'managed' or ${t.workdirPath} ~ '^projects/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$'`,
    ),
  ],
);

export type Project = typeof projects.$inferSelect;
export type NewProject = typeof projects.$inferInsert;
