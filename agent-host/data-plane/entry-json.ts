import type { EntryInfo } from "../workspace/entry-kind.ts";
import { apiPath } from "./query-path.ts";

/** One entry as the API shows it (shared/contracts DataPlaneFileEntry, plus its path). */
export interface EntryJson {
  readonly name: string;
  readonly type: "file" | "dir";
  readonly size: number;
  readonly mtime: string;
}

/** A directory's own st_size means nothing portable: the contract says 0. */
export function entryJson(info: EntryInfo): EntryJson {
  return {
    name: info.name,
    type: info.type,
    size: info.type === "dir" ? 0 : info.size,
    mtime: new Date(info.mtimeMs).toISOString(),
  };
}

/** A created entry, with its Workdir path (`/dir/name`). */
export function createdJson(dir: string, info: EntryInfo): EntryJson & { readonly path: string } {
  return { ...entryJson(info), path: apiPath(dir === "" ? info.name : `${dir}/${info.name}`) };
}
