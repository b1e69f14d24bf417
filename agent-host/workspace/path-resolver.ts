import { createOpenat2Resolver, WORKSPACE_RESOLVE_FLAGS } from "./openat2-resolver.ts";
import {
  AT_FDCWD,
  type FsSyscalls,
  O_CLOEXEC,
  O_DIRECTORY,
  O_PATH,
  type SysResult,
} from "./syscalls.ts";
import { createWalkResolver } from "./walk-resolver.ts";

export type ResolverKind = "openat2" | "walk";

/**
 * Opens a path below a directory descriptor without ever following a symbolic link and
 * without ever leaving that directory. Two implementations, one contract: `openat2` (one
 * kernel call, Linux 5.6+) and `walk` (one openat per component), so the same test suite
 * runs against both.
 */
export interface PathResolver {
  readonly kind: ResolverKind;
  /**
   * Opens `components` beneath `dirfd`. O_NOFOLLOW and O_CLOEXEC are always added: a symlink
   * as the final component fails with ELOOP (or, with O_PATH, yields a descriptor of the link
   * itself, which callers refuse after fstat), a symlink as a middle component fails with
   * ELOOP or ENOTDIR. An empty list opens `dirfd` itself again. Components must be single,
   * validated names (never empty, `.`, `..`, or containing `/` or NUL); anything else fails
   * closed with EXDEV or EINVAL. Never pass O_CREAT: create with a single-name openat on the
   * parent's descriptor.
   */
  open(dirfd: number, components: readonly string[], flags: number): SysResult<number>;
}

export interface PathResolverOptions {
  /** `auto` (default) probes openat2 once and falls back to `walk` when the kernel lacks it. */
  readonly kind?: ResolverKind | "auto";
}

/**
 * Chooses the resolver once, at construction. A kernel without openat2 answers ENOSYS; a
 * container runtime's seccomp filter that does not know the syscall answers EPERM (older
 * Docker): both mean "use the walk". Forcing `openat2` where it is unavailable throws, so a
 * test that asks for it never silently runs the other one.
 */
export function createPathResolver(
  sys: FsSyscalls,
  options: PathResolverOptions = {},
): PathResolver {
  const kind = options.kind ?? "auto";
  if (kind === "walk") return createWalkResolver(sys);
  const probe = probeOpenat2(sys);
  if (probe.ok) return createOpenat2Resolver(sys);
  if (kind === "openat2") {
    throw new Error(
      `openat2 is not available on this kernel (errno ${probe.errno}): use resolver "walk" or "auto"`,
    );
  }
  return createWalkResolver(sys);
}

function probeOpenat2(sys: FsSyscalls): SysResult<true> {
  const res = sys.openat2(AT_FDCWD, ".", {
    flags: O_PATH | O_DIRECTORY | O_CLOEXEC,
    mode: 0,
    resolve: WORKSPACE_RESOLVE_FLAGS,
  });
  if (!res.ok) return res;
  sys.close(res.value);
  return { ok: true, value: true };
}
