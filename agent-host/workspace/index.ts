export type { CopyOptions } from "./copy-entry.ts";
export { parseDataPlanePath } from "./data-plane-path.ts";
export type { EntryInfo, EntryKind } from "./entry-kind.ts";
export { type FanotifyFeed, openFanotifyFeed } from "./fanotify-feed.ts";
export type { Owner } from "./fs-context.ts";
export { IncrementalScans } from "./incremental-scans.ts";
export { createLibcSyscalls, type LibcSyscallsOptions } from "./libc-syscalls.ts";
export type { ListOptions, ListResult } from "./list-directory.ts";
export type { MakeDirectoryOptions } from "./make-directory.ts";
export type { MetadataScan, MetadataScanLimits, MetadataStamp } from "./metadata-scan.ts";
export type { MoveOptions } from "./move-entry.ts";
export {
  createPathResolver,
  type PathResolver,
  type PathResolverOptions,
  type ResolverKind,
} from "./path-resolver.ts";
export type { ByteRange, WorkspaceFileReader } from "./read-file.ts";
export { READ_CHUNK_BYTES } from "./read-file.ts";
export type { RemoveOptions } from "./remove-entry.ts";
export type { SearchHit, SearchOptions, SearchResult } from "./search-tree.ts";
export type { FsSyscalls, SysResult } from "./syscalls.ts";
export {
  createUserWorkspaces,
  type UserWorkspaces,
  type UserWorkspacesDeps,
  WORKDIR_OUTPUTS_DIR,
  WORKDIR_UPLOADS_DIR,
} from "./user-workspaces.ts";
export {
  createWorkspaceFs,
  type MetadataScanner,
  type WorkspaceFs,
  type WorkspaceFsDeps,
} from "./workspace-fs.ts";
export * from "./workspace-limits.ts";
export type { BatchFile, BatchOptions } from "./write-batch.ts";
export type { WriteOptions } from "./write-file.ts";
export type { WriteSource } from "./write-source.ts";
