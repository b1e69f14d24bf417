import { type EntryInfo, entryInfoOf } from "./entry-kind.ts";
import { displayPath, type FsContext, openDirectory } from "./fs-context.ts";
import { readVisibleEntries } from "./list-directory.ts";
import { O_DIRECTORY, O_PATH } from "./syscalls.ts";

export interface SearchOptions {
  /** Case-insensitive substring of the name; empty or absent matches everything. */
  readonly query?: string;
  /** Only this kind of entry. */
  readonly type?: "file" | "dir";
  readonly maxDepth?: number;
  readonly maxVisited?: number;
  readonly maxResults?: number;
  readonly signal?: AbortSignal;
}

export interface SearchHit extends EntryInfo {
  /** Relative to the directory the WorkspaceFs is bound to. */
  readonly path: string;
}

export interface SearchResult {
  readonly items: SearchHit[];
  /** True when a bound (depth, visited, results) stopped the search early. */
  readonly truncated: boolean;
}

/**
 * Breadth-first search below a directory, bounded three ways: depth, entries examined and
 * matches returned. Symlinks and special files are neither matched nor entered. Each queued
 * directory is opened again from the root with the no-follow resolver (rather than keeping a
 * descriptor per queued directory), so memory is one name list per queued directory and a
 * directory swapped for a symlink after it was listed is simply skipped.
 */
export function searchTree(
  ctx: FsContext,
  rootFd: number,
  names: readonly string[],
  options: SearchOptions = {},
): SearchResult {
  options.signal?.throwIfAborted();
  const errCtx = { op: "search", path: displayPath(names) };
  const maxDepth = options.maxDepth ?? ctx.limits.maxSearchDepth;
  const maxVisited = options.maxVisited ?? ctx.limits.maxSearchVisited;
  const maxResults = options.maxResults ?? ctx.limits.maxSearchResults;
  const query = options.query?.toLowerCase() ?? "";

  // The start directory must exist and be a real directory: that error is the caller's.
  ctx.sys.close(openDirectory(ctx, rootFd, names, errCtx, { finalFileCode: "invalid_request" }));

  const items: SearchHit[] = [];
  const queue: { names: readonly string[]; depth: number }[] = [{ names, depth: 0 }];
  let visited = 0;
  let truncated = false;
  for (let head = 0; head < queue.length; head++) {
    options.signal?.throwIfAborted();
    const dir = queue[head] as { names: readonly string[]; depth: number };
    queue[head] = { names: [], depth: 0 }; // let the name list go
    const budget = maxVisited - visited;
    if (budget <= 0) {
      truncated = true;
      break;
    }
    const opened = ctx.resolver.open(rootFd, dir.names, O_PATH | O_DIRECTORY);
    if (!opened.ok) continue; // gone or swapped for a symlink since it was listed
    let listing: ReturnType<typeof readVisibleEntries>;
    try {
      listing = readVisibleEntries(ctx, opened.value, budget, errCtx);
    } finally {
      ctx.sys.close(opened.value);
    }
    visited += listing.read;
    if (listing.truncated) truncated = true;
    listing.entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const entry of listing.entries) {
      const info = entryInfoOf(entry.name, entry.stats);
      const path = [...dir.names, entry.name];
      const matches =
        (query === "" || entry.name.toLowerCase().includes(query)) &&
        (options.type === undefined || options.type === info.type);
      if (matches) {
        if (items.length >= maxResults) {
          truncated = true;
          return { items, truncated };
        }
        items.push({ ...info, path: path.join("/") });
      }
      if (info.type === "dir") {
        if (dir.depth + 1 <= maxDepth) queue.push({ names: path, depth: dir.depth + 1 });
        else truncated = true;
      }
    }
  }
  return { items, truncated };
}
