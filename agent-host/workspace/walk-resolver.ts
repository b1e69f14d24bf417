import { componentErrno } from "./component-check.ts";
import type { PathResolver } from "./path-resolver.ts";
import {
  type FsSyscalls,
  O_CLOEXEC,
  O_DIRECTORY,
  O_NOFOLLOW,
  O_PATH,
  sysFail,
} from "./syscalls.ts";

/** How every intermediate directory is opened: a handle only, never a symlink, must be a dir. */
const STEP_FLAGS = O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;

/**
 * The fallback for kernels without openat2: one openat per component, each relative to the
 * descriptor of the previous one. O_NOFOLLOW|O_DIRECTORY on every intermediate step means a
 * symlink there fails (ENOTDIR) instead of being followed, and since each step starts from a
 * descriptor we hold, swapping a directory for a symlink between two steps changes nothing:
 * the next lookup happens inside the directory we already opened. `..` is refused by
 * componentErrno, so the walk can never climb out.
 */
export function createWalkResolver(sys: FsSyscalls): PathResolver {
  return {
    kind: "walk",
    open(dirfd, components, flags) {
      for (const name of components) {
        const bad = componentErrno(name);
        if (bad !== undefined) return sysFail(bad);
      }
      const last = components.length - 1;
      if (last < 0) return sys.openat(dirfd, ".", flags | O_NOFOLLOW | O_CLOEXEC);
      let current = dirfd;
      try {
        for (let i = 0; i < last; i++) {
          const step = sys.openat(current, components[i] as string, STEP_FLAGS);
          if (!step.ok) return step;
          if (current !== dirfd) sys.close(current);
          current = step.value;
        }
        return sys.openat(current, components[last] as string, flags | O_NOFOLLOW | O_CLOEXEC);
      } finally {
        if (current !== dirfd) sys.close(current);
      }
    },
  };
}
