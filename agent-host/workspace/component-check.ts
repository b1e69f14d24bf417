import { Errno } from "./syscalls.ts";

/**
 * Last line of defence inside the resolvers: callers validate names first
 * (workspace-path.ts), but a resolver must stay closed even if one forgets. `..` would walk
 * out of the directory with a plain openat, so it fails with EXDEV (the errno openat2 gives
 * for an escape), which maps to forbidden; other malformed names fail with EINVAL.
 */
export function componentErrno(name: string): number | undefined {
  if (name === "..") return Errno.EXDEV;
  if (name === "" || name === "." || name.includes("/") || name.includes("\u0000")) {
    return Errno.EINVAL;
  }
  return undefined;
}
