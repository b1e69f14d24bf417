/**
 * What a run's sandbox may write (docs/architecture.md §5 "File views"): `workspace`, the whole
 * UserWorkspace read-write; `workdir`, the UserWorkspace read-only and only the Workdir
 * read-write. Used by the API contract, the sandbox row and both tiers' mounts.
 */
export const FILE_VIEW_VALUES = ["workspace", "workdir"] as const;
export type FileView = (typeof FILE_VIEW_VALUES)[number];
export const DEFAULT_FILE_VIEW: FileView = "workspace";
