import { type EntryKind, entryKindOf } from "./entry-kind.ts";
import { type FsSyscalls, O_CLOEXEC, O_NOFOLLOW, O_PATH } from "./syscalls.ts";

export type PathDiagnosis =
  | { readonly kind: "ok" }
  | { readonly kind: "missing"; readonly index: number }
  | { readonly kind: Exclude<EntryKind, "dir">; readonly index: number; readonly final: boolean };

/**
 * Explains, after the fact, why a no-follow open failed: which component is missing, is a
 * symlink, or is not a directory. The kernel reports a symlinked directory in the middle of a
 * path as ENOTDIR under O_DIRECTORY|O_NOFOLLOW but as ELOOP under openat2, and a regular file
 * in the middle as ENOTDIR too, so the errno alone cannot tell "403 symlink" from "404 parent
 * is a file".
 *
 * Security does not depend on this: the failing open already refused, and this walk only
 * chooses the error code. It opens each component O_PATH|O_NOFOLLOW (never a symlink target)
 * relative to the previous descriptor. If the tree changed in between, the answer may be
 * `ok`, and the caller falls back to the plain errno mapping.
 */
export function diagnosePath(
  sys: FsSyscalls,
  dirfd: number,
  names: readonly string[],
): PathDiagnosis {
  let current = dirfd;
  try {
    for (let index = 0; index < names.length; index++) {
      const name = names[index] as string;
      const opened = sys.openat(current, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
      if (!opened.ok) return { kind: "missing", index };
      if (current !== dirfd) sys.close(current);
      current = opened.value;
      const st = sys.fstat(current);
      if (!st.ok) return { kind: "missing", index };
      const kind = entryKindOf(st.value);
      if (kind !== "dir") return { kind, index, final: index === names.length - 1 };
    }
    return { kind: "ok" };
  } finally {
    if (current !== dirfd) sys.close(current);
  }
}
