import { lstat, realpath } from "node:fs/promises";
import { dirname } from "node:path";

/** Where scripts/build-exec-shim.sh installs the exec shim (decision 0088). */
export const DEFAULT_EXEC_SHIM = "/usr/local/libexec/workcell/exec-shim";

const GROUP_OR_OTHER_WRITE = 0o022;
const STICKY = 0o1000;
const ANY_EXECUTE = 0o111;

/**
 * The exec shim's canonical path, or what is wrong with it. Every exec's command passes
 * through this binary (it reads the exec's argv and environment, secrets included), and
 * bwrap 0.8 binds it by path: so it must be a regular file of root's that nobody else can
 * write, below directories of root's that nobody else can write (a sticky one, like /tmp,
 * lets nobody rename root's entries either). Anything else and the tier is unavailable.
 */
export async function checkExecShim(
  path: string,
): Promise<{ ok: true; path: string } | { ok: false; missing: string }> {
  const fix = "build it with scripts/build-exec-shim.sh (scripts/ensure-system.sh does)";
  const real = await realpath(path).catch(() => undefined);
  if (real === undefined) {
    return { ok: false, missing: `the exec shim ${path} is missing: ${fix}` };
  }
  const file = await lstat(real);
  if (!file.isFile() || (file.mode & ANY_EXECUTE) === 0) {
    return { ok: false, missing: `the exec shim ${real} is not an executable file: ${fix}` };
  }
  if (file.uid !== 0 || (file.mode & GROUP_OR_OTHER_WRITE) !== 0) {
    return {
      ok: false,
      missing: `the exec shim ${real} must be root's and read-only to others (it is uid ${file.uid}, mode ${(file.mode & 0o7777).toString(8)}): ${fix}`,
    };
  }
  for (let dir = dirname(real); ; dir = dirname(dir)) {
    const d = await lstat(dir);
    if (d.uid !== 0 || ((d.mode & GROUP_OR_OTHER_WRITE) !== 0 && (d.mode & STICKY) === 0)) {
      return {
        ok: false,
        missing: `the exec shim ${real} is below ${dir}, which someone other than root can write: ${fix}`,
      };
    }
    if (dir === dirname(dir)) break;
  }
  return { ok: true, path: real };
}
