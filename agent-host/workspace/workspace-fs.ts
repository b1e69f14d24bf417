import { type CopyOptions, copyEntry } from "./copy-entry.ts";
import type { EntryInfo } from "./entry-kind.ts";
import { displayPath, type FsContextOptions, fsContextOf, openDirectory } from "./fs-context.ts";
import { type ListOptions, type ListResult, listDirectory } from "./list-directory.ts";
import { ensureDirectory, type MakeDirectoryOptions, makeDirectory } from "./make-directory.ts";
import { type MetadataScan, type MetadataScanLimits, scanMetadata } from "./metadata-scan.ts";
import { type MoveOptions, moveEntry } from "./move-entry.ts";
import type { ResolverKind } from "./path-resolver.ts";
import { openFileReader, readEntry, statEntry, type WorkspaceFileReader } from "./read-file.ts";
import { type RemoveOptions, removeEntry } from "./remove-entry.ts";
import { type SearchOptions, type SearchResult, searchTree } from "./search-tree.ts";
import { splitWorkspacePath } from "./workspace-path.ts";
import { type BatchFile, type BatchOptions, writeBatch } from "./write-batch.ts";
import { type WriteOptions, writeEntry } from "./write-file.ts";
import type { WriteSource } from "./write-source.ts";

/**
 * The safe file layer over one directory: a UserWorkspace root or a Workdir inside it.
 *
 * Every path is relative to that directory (`""` = the directory itself), validated by
 * splitWorkspacePath, and resolved from its descriptor with no-follow, never-leave-the-root
 * semantics (PathResolver). Only regular files and real directories are ever read, listed,
 * copied or moved; symlinks and special files are refused (403) or hidden. Writes are
 * no-clobber and atomic (temp file + RENAME_NOREPLACE / linkat).
 *
 * Errors: every method throws a WorkcellError (see errno-error.ts for the mapping) or, when
 * its signal aborts, the signal's reason. Nothing is returned as an error value.
 *
 * The instance owns one descriptor; `close()` releases it once no operation is using it.
 */
export interface WorkspaceFs {
  readonly resolverKind: ResolverKind;
  stat(path: string, options?: { readonly signal?: AbortSignal }): Promise<EntryInfo>;
  list(path: string, options?: ListOptions): Promise<ListResult>;
  search(path: string, options?: SearchOptions): Promise<SearchResult>;
  readFile(
    path: string,
    options?: { readonly maxBytes?: number; readonly signal?: AbortSignal },
  ): Promise<Buffer>;
  /** For streaming with Range: check `info.size`, then `stream({ range })`, or `close()`. */
  openRead(path: string, options?: { readonly signal?: AbortSignal }): Promise<WorkspaceFileReader>;
  mkdir(path: string, options?: MakeDirectoryOptions): Promise<EntryInfo>;
  /** `mkdir -p`: existing real directories are fine, a symlink on the way is forbidden. */
  ensureDir(path: string, options?: { readonly signal?: AbortSignal }): Promise<void>;
  writeFile(path: string, source: WriteSource, options?: WriteOptions): Promise<EntryInfo>;
  writeBatch(
    dir: string,
    files: readonly BatchFile[],
    options?: BatchOptions,
  ): Promise<EntryInfo[]>;
  remove(path: string, options?: RemoveOptions): Promise<void>;
  copy(from: string, to: string, options?: CopyOptions): Promise<EntryInfo>;
  move(from: string, to: string, options?: MoveOptions): Promise<EntryInfo>;
  /**
   * Metadata of the regular files below `path` (never their bytes), bounded, no-follow
   * (metadata-scan.ts): the Execution Lease's snapshot and scan of a writable root.
   */
  scanMetadata(
    path: string,
    limits: MetadataScanLimits,
    options?: { readonly signal?: AbortSignal; readonly scanner?: MetadataScanner },
  ): Promise<MetadataScan>;
  /** A WorkspaceFs bound to a subdirectory (opened no-follow); the caller closes it. */
  openSubdir(path: string, options?: { readonly signal?: AbortSignal }): Promise<WorkspaceFs>;
  close(): void;
  [Symbol.dispose](): void;
}

/** scanMetadata or a scanner that returns what it would (incremental-scans.ts). */
export type MetadataScanner = typeof scanMetadata;

export interface WorkspaceFsDeps extends FsContextOptions {
  /** An open descriptor of the directory; the WorkspaceFs takes ownership of it. */
  readonly rootFd: number;
}

export function createWorkspaceFs(deps: WorkspaceFsDeps): WorkspaceFs {
  const ctx = fsContextOf(deps);
  const rootFd = deps.rootFd;
  // The root descriptor must not be closed while an operation uses it: its number would be
  // reused by the next open, and the operation would continue relative to another directory.
  let active = 0;
  let closing = false;
  let closed = false;
  const release = (): void => {
    if (closing && active === 0 && !closed) {
      closed = true;
      ctx.sys.close(rootFd);
    }
  };
  async function use<T>(fn: () => T | Promise<T>): Promise<T> {
    if (closing) throw new Error("WorkspaceFs is closed");
    active++;
    try {
      return await fn();
    } finally {
      active--;
      release();
    }
  }
  const split = (path: string): string[] => splitWorkspacePath(path, ctx.limits);

  const fs: WorkspaceFs = {
    resolverKind: ctx.resolver.kind,
    stat: (path, options = {}) => use(() => statEntry(ctx, rootFd, split(path), options.signal)),
    list: (path, options = {}) => use(() => listDirectory(ctx, rootFd, split(path), options)),
    search: (path, options = {}) => use(() => searchTree(ctx, rootFd, split(path), options)),
    readFile: (path, options = {}) => use(() => readEntry(ctx, rootFd, split(path), options)),
    openRead: (path, options = {}) =>
      use(() => openFileReader(ctx, rootFd, split(path), options.signal)),
    mkdir: (path, options = {}) => use(() => makeDirectory(ctx, rootFd, split(path), options)),
    ensureDir: (path, options = {}) =>
      use(() => {
        options.signal?.throwIfAborted();
        const names = split(path);
        const errCtx = { op: "mkdir", path: displayPath(names) };
        ctx.sys.close(
          ensureDirectory(ctx, rootFd, names, errCtx, { finalFileCode: "invalid_request" }),
        );
      }),
    writeFile: (path, source, options = {}) =>
      use(() => writeEntry(ctx, rootFd, split(path), source, options)),
    writeBatch: (dir, files, options = {}) =>
      use(() => writeBatch(ctx, rootFd, split(dir), files, options)),
    remove: (path, options = {}) => use(() => removeEntry(ctx, rootFd, split(path), options)),
    copy: (from, to, options = {}) =>
      use(() => copyEntry(ctx, rootFd, split(from), split(to), options)),
    move: (from, to, options = {}) =>
      use(() => moveEntry(ctx, rootFd, split(from), split(to), options)),
    scanMetadata: (path, limits, options = {}) =>
      use(async () => {
        const names = split(path);
        const errCtx = { op: "scan", path: displayPath(names) };
        const fd =
          names.length === 0
            ? rootFd
            : openDirectory(ctx, rootFd, names, errCtx, { finalFileCode: "invalid_request" });
        try {
          return await (options.scanner ?? scanMetadata)(
            fd,
            limits,
            ctx.limits,
            options.signal ?? new AbortController().signal,
          );
        } finally {
          if (fd !== rootFd) ctx.sys.close(fd);
        }
      }),
    openSubdir: (path, options = {}) =>
      use(() => {
        options.signal?.throwIfAborted();
        const names = split(path);
        const errCtx = { op: "open", path: displayPath(names) };
        const fd = openDirectory(ctx, rootFd, names, errCtx, { finalFileCode: "invalid_request" });
        return createWorkspaceFs({ ...deps, limits: ctx.limits, rootFd: fd });
      }),
    close() {
      closing = true;
      release();
    },
    [Symbol.dispose]() {
      fs.close();
    },
  };
  return fs;
}
