import type { Stats } from "node:fs";
import { WorkcellError } from "../../shared/errors/index.ts";
import type { EntryInfo } from "./entry-kind.ts";
import { type ErrnoErrorContext, tooLarge } from "./errno-error.ts";
import {
  displayPath,
  type FsContext,
  lstatName,
  openDirectory,
  withFdAsync,
} from "./fs-context.ts";
import { ensureDirectory } from "./make-directory.ts";
import { validateEntryName } from "./workspace-path.ts";
import { publishTemp, syncDirectory, type WrittenTemp, writeTemp } from "./write-file.ts";
import type { WriteSource } from "./write-source.ts";

export interface BatchFile {
  /** A single name (no `/`) inside the batch directory. */
  readonly name: string;
  readonly source: WriteSource;
}

export interface BatchOptions {
  /** Create the batch directory (and its parents, 0700) if missing, e.g. `uploads/`. */
  readonly parents?: boolean;
  readonly maxFiles?: number;
  /** All files together. */
  readonly maxBytes?: number;
  /** Each file. */
  readonly maxFileBytes?: number;
  readonly fsync?: boolean;
  readonly signal?: AbortSignal;
}

/**
 * Writes a set of files into one directory, all or nothing (docs/architecture.md §5).
 *
 * 1. The whole set is validated before any I/O: a bad name is invalid_request (400), a name
 *    twice in the batch is a conflict (409), too many files is payload_too_large (413).
 * 2. The directory is opened no-follow; a name that already exists there (any kind, even a
 *    dangling symlink) is a conflict and nothing is written.
 * 3. Every file is written to its own temp file first (the slow part), then all are
 *    published in a quick second pass with the no-clobber publish.
 * 4. Any failure (a write error, a limit, an abort, a name that appeared meanwhile) removes
 *    every temp file and every file this batch already published, so the directory ends as
 *    it was. A published file is removed only if the name still refers to the inode we
 *    created, so a file someone else put there in the meantime is never deleted.
 */
export async function writeBatch(
  ctx: FsContext,
  rootFd: number,
  dirNames: readonly string[],
  files: readonly BatchFile[],
  options: BatchOptions = {},
): Promise<EntryInfo[]> {
  options.signal?.throwIfAborted();
  const errCtx = { op: "batch write", path: displayPath(dirNames) };
  validateBatch(ctx, files, options, errCtx);
  const dirfd = options.parents
    ? ensureDirectory(ctx, rootFd, dirNames, errCtx, { finalFileCode: "not_found" })
    : openDirectory(ctx, rootFd, dirNames, errCtx, { finalFileCode: "not_found" });
  return withFdAsync(ctx, dirfd, async (fd) => {
    const existing = files.filter((f) => lstatName(ctx, fd, f.name, errCtx) !== undefined);
    if (existing.length > 0) {
      throw new WorkcellError(
        "conflict",
        "Some names of the batch already exist: rename them or delete the existing entries.",
        {
          details: {
            path: errCtx.path,
            op: errCtx.op,
            reason: "name_exists",
            names: existing.map((f) => f.name),
          },
        },
      );
    }
    const maxBytes = options.maxBytes ?? ctx.limits.maxBatchBytes;
    const maxFileBytes = options.maxFileBytes ?? ctx.limits.maxWriteBytes;
    const temps: WrittenTemp[] = [];
    const published: { name: string; st: Stats }[] = [];
    let publishedTemps = 0;
    try {
      let total = 0;
      for (const file of files) {
        const fileCtx = { op: errCtx.op, path: joinPath(dirNames, file.name) };
        const remaining = maxBytes - total;
        const limit = Math.min(maxFileBytes, remaining);
        try {
          const temp = await writeTemp(ctx, fd, file.source, limit, options, fileCtx);
          temps.push(temp);
          total += temp.info.size;
        } catch (err) {
          // The per-file limit is reported as such; running out of the batch total too.
          if (
            err instanceof WorkcellError &&
            err.code === "payload_too_large" &&
            limit === remaining
          ) {
            throw tooLarge(errCtx, "maxBytes", maxBytes);
          }
          throw err;
        }
      }
      for (const [i, temp] of temps.entries()) {
        const name = (files[i] as BatchFile).name;
        const fileCtx = { op: errCtx.op, path: joinPath(dirNames, name) };
        options.signal?.throwIfAborted();
        publishTemp(ctx, fd, temp.tempName, name, false, fileCtx);
        publishedTemps++;
        const st = lstatName(ctx, fd, name, fileCtx);
        if (st !== undefined) published.push({ name, st });
      }
      if (options.fsync ?? ctx.fsync) await syncDirectory(ctx, fd, errCtx);
      return temps.map((temp, i) => ({ ...temp.info, name: (files[i] as BatchFile).name }));
    } catch (err) {
      rollBack(ctx, fd, temps.slice(publishedTemps), published);
      throw err;
    }
  });
}

function validateBatch(
  ctx: FsContext,
  files: readonly BatchFile[],
  options: BatchOptions,
  errCtx: ErrnoErrorContext,
): void {
  if (files.length === 0) {
    throw new WorkcellError("invalid_request", "A batch needs at least one file.", {
      details: { path: errCtx.path, reason: "empty_batch" },
    });
  }
  const maxFiles = options.maxFiles ?? ctx.limits.maxBatchFiles;
  if (files.length > maxFiles) throw tooLarge(errCtx, "maxFiles", maxFiles);
  for (const [index, file] of files.entries()) {
    try {
      validateEntryName(file.name, ctx.limits);
    } catch (err) {
      if (!(err instanceof WorkcellError)) throw err;
      throw new WorkcellError(err.code, err.message, { details: { ...err.details, index } });
    }
  }
  const seen = new Set<string>();
  const duplicates = new Set<string>();
  for (const file of files) {
    if (seen.has(file.name)) duplicates.add(file.name);
    seen.add(file.name);
  }
  if (duplicates.size > 0) {
    throw new WorkcellError(
      "conflict",
      "A name appears more than once in the batch: give each file its own name.",
      {
        details: { path: errCtx.path, reason: "duplicate_name", names: [...duplicates] },
      },
    );
  }
}

/**
 * Undoes a failed batch: unpublished temp names are ours alone (random, O_EXCL); a published
 * name is removed only while it still refers to the inode we published (same dev and ino),
 * so a file that replaced ours in the meantime survives. Errors are ignored: the batch's
 * own error is what the caller must see.
 */
function rollBack(
  ctx: FsContext,
  dirfd: number,
  unpublished: readonly WrittenTemp[],
  published: readonly { name: string; st: Stats }[],
): void {
  for (const temp of unpublished) ctx.sys.unlinkat(dirfd, temp.tempName, 0);
  for (const entry of published) {
    const now = ctx.sys.lstatAt(dirfd, entry.name);
    if (now.ok && now.value.ino === entry.st.ino && now.value.dev === entry.st.dev) {
      ctx.sys.unlinkat(dirfd, entry.name, 0);
    }
  }
}

function joinPath(dirNames: readonly string[], name: string): string {
  return [...dirNames, name].join("/");
}
