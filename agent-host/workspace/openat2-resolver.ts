import { componentErrno } from "./component-check.ts";
import type { PathResolver } from "./path-resolver.ts";
import {
  type FsSyscalls,
  O_CLOEXEC,
  O_NOFOLLOW,
  RESOLVE_BENEATH,
  RESOLVE_NO_MAGICLINKS,
  RESOLVE_NO_SYMLINKS,
  sysFail,
} from "./syscalls.ts";

/** Flags of every openat2 call of the workspace layer. */
export const WORKSPACE_RESOLVE_FLAGS =
  RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;

/**
 * One openat2 call per lookup. RESOLVE_BENEATH makes the kernel refuse any step above the
 * starting directory (EXDEV), RESOLVE_NO_SYMLINKS refuses every symlink on the way (ELOOP),
 * RESOLVE_NO_MAGICLINKS refuses /proc-style magic links. The kernel checks all of this
 * during the same lookup that opens the file, so there is no window between check and use.
 */
export function createOpenat2Resolver(sys: FsSyscalls): PathResolver {
  return {
    kind: "openat2",
    open(dirfd, components, flags) {
      for (const name of components) {
        const bad = componentErrno(name);
        if (bad !== undefined) return sysFail(bad);
      }
      const path = components.length === 0 ? "." : components.join("/");
      return sys.openat2(dirfd, path, {
        flags: flags | O_NOFOLLOW | O_CLOEXEC,
        mode: 0,
        resolve: WORKSPACE_RESOLVE_FLAGS,
      });
    },
  };
}
