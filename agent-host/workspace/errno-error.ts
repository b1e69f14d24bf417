import { domainError, WorkcellError } from "../../shared/errors/index.ts";
import { diagnosePath } from "./diagnose-path.ts";
import { Errno, type FsSyscalls } from "./syscalls.ts";

/**
 * Error policy of the workspace layer: every operation either succeeds or throws a
 * WorkcellError (the data plane maps it to HTTP in its one onError). Failures are not
 * returned as values here because every caller (HTTP handler, attachment import, skills)
 * turns any of them into "stop and report"; the branching cases (EEXIST on a temp name,
 * RENAME_NOREPLACE unsupported) are handled as SysResult values inside the layer.
 *
 * Codes: symlink, special file, escape, permission → forbidden (403); missing or a parent
 * that is not a directory → not_found (404); an existing name → conflict (409); malformed
 * names, a directory where a file is needed and vice versa → invalid_request (400); over a
 * byte/entry limit or out of space → payload_too_large (413); descriptor or memory
 * exhaustion → unavailable (503, retryable); anything else → internal (500). An aborted
 * operation rejects with the signal's reason (an AbortError), not a WorkcellError.
 */
export interface ErrnoErrorContext {
  /** What was attempted, for the message: "read", "write", "list", ... */
  readonly op: string;
  /** The path as the caller gave it (relative to the bound directory). */
  readonly path: string;
}

export function errnoError(errno: number, ctx: ErrnoErrorContext): WorkcellError {
  const details = { path: ctx.path, op: ctx.op };
  switch (errno) {
    case Errno.ELOOP:
      return domainError("symlink_refused", { details });
    case Errno.EXDEV:
      // RESOLVE_BENEATH answers EXDEV for any step out of the starting directory.
      return domainError("path_outside_workdir", { details });
    case Errno.ENXIO:
    case Errno.ENODEV:
    case Errno.ETXTBSY:
      return domainError("special_file_refused", { details });
    case Errno.EACCES:
    case Errno.EPERM:
    case Errno.EROFS:
      return new WorkcellError("forbidden", `Permission denied: cannot ${ctx.op} '${ctx.path}'.`, {
        details: { ...details, reason: "permission_denied" },
      });
    case Errno.ENOENT:
    case Errno.ENOTDIR:
      return notFound(ctx);
    case Errno.EEXIST:
      return domainError("name_exists", { details });
    case Errno.ENOTEMPTY:
      return new WorkcellError(
        "conflict",
        `'${ctx.path}' is a directory that is not empty: delete it recursively or empty it first.`,
        { details: { ...details, reason: "directory_not_empty" } },
      );
    case Errno.EISDIR:
      return new WorkcellError("invalid_request", `'${ctx.path}' is a directory.`, {
        details: { ...details, reason: "is_a_directory" },
      });
    case Errno.EINVAL:
      return new WorkcellError(
        "invalid_request",
        `Cannot ${ctx.op} '${ctx.path}': invalid operation.`,
        {
          details: { ...details, reason: "invalid_operation" },
        },
      );
    case Errno.ENAMETOOLONG:
      return new WorkcellError("invalid_request", `'${ctx.path}' is too long.`, {
        details: { ...details, reason: "name_too_long" },
      });
    case Errno.EDQUOT:
      // The UserWorkspace's filesystem quota (project quota, docs/decisions/0017).
      return new WorkcellError("quota_exceeded", undefined, {
        details: { ...details, reason: "workspace_quota" },
      });
    case Errno.ENOSPC:
    case Errno.EFBIG:
      return new WorkcellError(
        "payload_too_large",
        "The workspace has no room for this: free some space or write less.",
        { details: { ...details, reason: "no_space" } },
      );
    case Errno.EMFILE:
    case Errno.ENFILE:
    case Errno.ENOMEM:
    case Errno.EAGAIN:
    case Errno.EBUSY:
    case Errno.EINTR:
      return new WorkcellError("unavailable", undefined, { details: { ...details, errno } });
    default:
      return new WorkcellError("internal", `${ctx.op} '${ctx.path}' failed with errno ${errno}.`, {
        details: { ...details, errno },
      });
  }
}

export interface LookupErrorOptions {
  /**
   * What it means when the last name exists but is a regular file although a directory was
   * needed: `not_found` for a write's parent (docs/api.md: "parent missing or a file 404"),
   * `invalid_request` for a list or a Workdir ("a file → 400").
   */
  readonly finalFileCode: "not_found" | "invalid_request";
}

/**
 * The error for a failed lookup of `names` below `dirfd`: ELOOP / ENOTDIR / ENOENT are
 * ambiguous (see diagnose-path.ts), so the path is examined once more, no-follow, to name
 * the culprit. Any symlink on the way wins: it is always 403.
 */
export function lookupError(
  sys: FsSyscalls,
  dirfd: number,
  names: readonly string[],
  errno: number,
  ctx: ErrnoErrorContext,
  options: LookupErrorOptions,
): WorkcellError {
  if (errno !== Errno.ELOOP && errno !== Errno.ENOTDIR && errno !== Errno.ENOENT) {
    return errnoError(errno, ctx);
  }
  const found = diagnosePath(sys, dirfd, names);
  switch (found.kind) {
    case "ok":
      return errnoError(errno, ctx);
    case "missing":
      return notFound(ctx);
    case "symlink":
      return domainError("symlink_refused", {
        details: {
          path: ctx.path,
          op: ctx.op,
          component: names.slice(0, found.index + 1).join("/"),
        },
      });
    case "special":
      return found.final
        ? domainError("special_file_refused", { details: { path: ctx.path, op: ctx.op } })
        : notFound(ctx);
    case "file":
      if (!found.final || options.finalFileCode === "not_found") return notFound(ctx);
      return notADirectory(ctx);
  }
}

export function notFound(ctx: ErrnoErrorContext): WorkcellError {
  return new WorkcellError("not_found", `No such file or directory: '${ctx.path}'.`, {
    details: { path: ctx.path, op: ctx.op },
  });
}

export function notADirectory(ctx: ErrnoErrorContext): WorkcellError {
  return new WorkcellError("invalid_request", `'${ctx.path}' is not a directory.`, {
    details: { path: ctx.path, op: ctx.op, reason: "not_a_directory" },
  });
}

export function isADirectory(ctx: ErrnoErrorContext): WorkcellError {
  return new WorkcellError("invalid_request", `'${ctx.path}' is a directory.`, {
    details: { path: ctx.path, op: ctx.op, reason: "is_a_directory" },
  });
}

export function tooLarge(ctx: ErrnoErrorContext, limitName: string, limit: number): WorkcellError {
  return new WorkcellError(
    "payload_too_large",
    `Cannot ${ctx.op} '${ctx.path}': over the limit of ${limit} (${limitName}).`,
    { details: { path: ctx.path, op: ctx.op, limit, limitName } },
  );
}

/**
 * Maps an error thrown by Node's fs (read/write/fsync on a descriptor) to a WorkcellError;
 * anything else (an AbortError, a source's own error) is returned unchanged.
 */
export function mapNodeIoError(err: unknown, errCtx: ErrnoErrorContext): unknown {
  if (typeof err === "object" && err !== null) {
    const code = (err as { code?: unknown }).code;
    if (typeof code === "string" && code in Errno) {
      return errnoError(Errno[code as keyof typeof Errno], errCtx);
    }
  }
  return err;
}
