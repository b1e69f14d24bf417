import { randomBytes } from "node:crypto";
import type { Stats } from "node:fs";
import {
  type ErrnoErrorContext,
  errnoError,
  type LookupErrorOptions,
  lookupError,
} from "./errno-error.ts";
import type { PathResolver } from "./path-resolver.ts";
import {
  Errno,
  type FsSyscalls,
  O_CLOEXEC,
  O_CREAT,
  O_DIRECTORY,
  O_EXCL,
  O_NOFOLLOW,
  O_PATH,
  O_WRONLY,
} from "./syscalls.ts";
import {
  DEFAULT_WORKSPACE_LIMITS,
  FILE_MODE,
  TEMP_PREFIX,
  type WorkspaceLimits,
} from "./workspace-limits.ts";

/** Owner given to every file and directory the layer creates inside a workspace. */
export interface Owner {
  readonly uid: number;
  readonly gid: number;
}

/** What every operation of the layer needs; built once per WorkspaceFs. */
export interface FsContext {
  readonly sys: FsSyscalls;
  readonly resolver: PathResolver;
  readonly limits: WorkspaceLimits;
  /**
   * When set, new entries are chowned to it (the sandbox user, 1000:1000), so an agent-host
   * running as root creates files the sandbox can use. Unset: the process's own ids.
   */
  readonly owner: Owner | undefined;
  /** Default for `fsync` of writes: flush file data and the directory entry before success. */
  readonly fsync: boolean;
}

/** What a WorkspaceFs or the UserWorkspaces are configured with; the rest has defaults. */
export interface FsContextOptions {
  readonly sys: FsSyscalls;
  readonly resolver: PathResolver;
  /** Over DEFAULT_WORKSPACE_LIMITS. */
  readonly limits?: Partial<WorkspaceLimits>;
  readonly owner?: Owner;
  /** Off unless asked: see FsContext.fsync. */
  readonly fsync?: boolean;
}

export function fsContextOf(options: FsContextOptions): FsContext {
  return {
    sys: options.sys,
    resolver: options.resolver,
    limits: { ...DEFAULT_WORKSPACE_LIMITS, ...options.limits },
    owner: options.owner,
    fsync: options.fsync ?? false,
  };
}

export interface OpenDirectoryOptions extends LookupErrorOptions {
  /** Extra open flags; O_PATH (a handle for *at calls, no read access needed) by default. */
  readonly flags?: number;
}

/** Opens a directory below `dirfd` with no-follow semantics, or throws the mapped error. */
export function openDirectory(
  ctx: FsContext,
  dirfd: number,
  names: readonly string[],
  errCtx: ErrnoErrorContext,
  options: OpenDirectoryOptions,
): number {
  const opened = ctx.resolver.open(dirfd, names, (options.flags ?? O_PATH) | O_DIRECTORY);
  if (opened.ok) return opened.value;
  throw lookupError(ctx.sys, dirfd, names, opened.errno, errCtx, options);
}

/**
 * Opens the parent directory of `names` (which must not be empty) and returns it with the
 * last name. A missing parent, or a parent that is a file, is not_found (docs/api.md); a symlink
 * anywhere on the way is forbidden.
 */
export function openParent(
  ctx: FsContext,
  dirfd: number,
  names: readonly string[],
  errCtx: ErrnoErrorContext,
): { readonly fd: number; readonly name: string } {
  const name = names[names.length - 1];
  if (name === undefined) throw new Error("openParent needs at least one name");
  const fd = openDirectory(ctx, dirfd, names.slice(0, -1), errCtx, { finalFileCode: "not_found" });
  return { fd, name };
}

/** lstat of one name in an open directory; `undefined` when it does not exist. */
export function lstatName(
  ctx: FsContext,
  dirfd: number,
  name: string | Buffer,
  errCtx: ErrnoErrorContext,
): Stats | undefined {
  const st = ctx.sys.lstatAt(dirfd, name);
  if (st.ok) return st.value;
  if (st.errno === Errno.ENOENT) return undefined;
  throw errnoError(st.errno, errCtx);
}

/** fstat that throws the mapped error. */
export function fstatOrThrow(ctx: FsContext, fd: number, errCtx: ErrnoErrorContext): Stats {
  const st = ctx.sys.fstat(fd);
  if (st.ok) return st.value;
  throw errnoError(st.errno, errCtx);
}

/**
 * Gives a new entry its final mode and owner through its descriptor. fchmod makes the mode
 * exact whatever the process umask; fchown hands it to the sandbox user.
 */
export function finishNewEntry(
  ctx: FsContext,
  fd: number,
  mode: number,
  errCtx: ErrnoErrorContext,
): void {
  const chmod = ctx.sys.fchmod(fd, mode);
  if (!chmod.ok) throw errnoError(chmod.errno, errCtx);
  if (ctx.owner !== undefined) {
    const chown = ctx.sys.fchown(fd, ctx.owner.uid, ctx.owner.gid);
    if (!chown.ok) throw errnoError(chown.errno, errCtx);
  }
}

/** A fresh temp name: 64 random bits, so a collision (EEXIST) is only ever an attack or a bug. */
export function tempName(): string {
  return TEMP_PREFIX + randomBytes(8).toString("hex");
}

export function isTempName(name: string): boolean {
  return name.startsWith(TEMP_PREFIX);
}

/**
 * Creates an empty temp file in `dirfd`, mode 0600, exclusive. O_EXCL|O_CREAT never follows
 * a symlink at the name and never opens an existing file, so a name planted in advance (a
 * symlink to an outside file, a FIFO) makes this fail instead of writing through it.
 */
export function createTempFile(
  ctx: FsContext,
  dirfd: number,
  errCtx: ErrnoErrorContext,
): { readonly name: string; readonly fd: number } {
  for (let attempt = 0; attempt < ctx.limits.maxTempNameAttempts; attempt++) {
    const name = tempName();
    const opened = ctx.sys.openat(
      dirfd,
      name,
      O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
      FILE_MODE,
    );
    if (opened.ok) {
      try {
        finishNewEntry(ctx, opened.value, FILE_MODE, errCtx);
      } catch (err) {
        ctx.sys.close(opened.value);
        ctx.sys.unlinkat(dirfd, name, 0);
        throw err;
      }
      return { name, fd: opened.value };
    }
    if (opened.errno !== Errno.EEXIST) throw errnoError(opened.errno, errCtx);
  }
  throw errnoError(Errno.EEXIST, errCtx);
}

/** Runs `fn` with `fd` and closes it afterwards, whatever happens. */
export function withFd<T>(ctx: FsContext, fd: number, fn: (fd: number) => T): T {
  try {
    return fn(fd);
  } finally {
    ctx.sys.close(fd);
  }
}

/** Async variant of withFd: the descriptor stays open until the promise settles. */
export async function withFdAsync<T>(
  ctx: FsContext,
  fd: number,
  fn: (fd: number) => Promise<T>,
): Promise<T> {
  try {
    return await fn(fd);
  } finally {
    ctx.sys.close(fd);
  }
}

/** Joins names back into the caller's relative path, for messages. */
export function displayPath(names: readonly string[]): string {
  return names.length === 0 ? "/" : names.join("/");
}
