import type { Project } from "../../shared/contracts/project.ts";
import type { Project as ProjectRow } from "../../shared/db/schema.ts";
import { isoTime } from "../db/iso-time.ts";

export function projectBody(row: ProjectRow): Project {
  return {
    id: row.id,
    name: row.name,
    workdir_path: row.workdirPath,
    directory_mode: row.directoryMode,
    implicit: row.implicit,
    created_at: isoTime(row.createdAt),
  };
}
