import { constants } from "node:fs";
import { type FileHandle, lstat, mkdir, open } from "node:fs/promises";

// A small no-follow directory walk, local to the sandbox driver: it only has to open the
// two host directories that get bound into a sandbox and check the Workdir below one of
// them. (agent-host/workspace/ owns the general safe file layer.)
//
// Node has no openat(2), so a component is opened relative to its parent's fd through
// the parent's /proc/self/fd magic link: the kernel resolves `/proc/self/fd/<n>` to the
// already-open directory itself (whatever has been renamed or swapped since), and
// O_NOFOLLOW then applies to the one component after it. That is openat(n, component,
// O_NOFOLLOW|O_DIRECTORY), one component at a time, so a symlink anywhere below the
// base is refused rather than followed.

const DIR_NOFOLLOW = constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW;

export type DirRefusal = "symlink_refused" | "workdir_missing";

export type OpenDirResult =
  | { ok: true; handle: FileHandle }
  | { ok: false; reason: DirRefusal; detail: string };

export type OpenBeneathOptions = {
  /** Create missing components (mode 0755, owned by agent-host) instead of refusing. */
  create?: boolean;
};

/**
 * Opens `base` (the operator-configured data root: trusted, so it may itself sit behind
 * a symlink) and then each of `components` beneath it without following symlinks.
 * Returns an open handle on the last directory; the caller closes it.
 */
export async function openDirBeneath(
  base: string,
  components: readonly string[],
  options: OpenBeneathOptions = {},
): Promise<OpenDirResult> {
  let current: FileHandle | undefined = await open(
    base,
    constants.O_RDONLY | constants.O_DIRECTORY,
  );
  try {
    for (const [index, component] of components.entries()) {
      if (component === "" || component === "." || component === ".." || component.includes("/")) {
        throw new Error(`openDirBeneath: bad path component ${JSON.stringify(component)}`);
      }
      const shown = components.slice(0, index + 1).join("/");
      const next = await openChild(current, component, shown, options.create === true);
      if (!next.ok) return next;
      await current.close();
      current = next.handle;
    }
    const handle: FileHandle = current;
    current = undefined; // ownership passes to the caller
    return { ok: true, handle };
  } finally {
    await current?.close();
  }
}

async function openChild(
  parent: FileHandle,
  name: string,
  shown: string,
  create: boolean,
): Promise<OpenDirResult> {
  const path = `/proc/self/fd/${parent.fd}/${name}`;
  try {
    return { ok: true, handle: await open(path, DIR_NOFOLLOW) };
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOENT" && create) {
      // EEXIST means a concurrent creator won; the no-follow open below still judges
      // whatever is there now, so a symlink planted in the race is refused too.
      await mkdir(path, { mode: 0o755 }).catch((e: NodeJS.ErrnoException) => {
        if (e.code !== "EEXIST") throw e;
      });
      return openChild(parent, name, shown, false);
    }
    if (code === "ENOENT") {
      return { ok: false, reason: "workdir_missing", detail: `${shown} does not exist` };
    }
    // O_NOFOLLOW|O_DIRECTORY on a symlink fails with ENOTDIR (or ELOOP): tell the two
    // refusals apart for the message only; both refuse.
    if (code === "ENOTDIR" || code === "ELOOP") {
      const isLink = await lstat(path).then(
        (s) => s.isSymbolicLink(),
        () => false,
      );
      return isLink
        ? { ok: false, reason: "symlink_refused", detail: `${shown} is a symbolic link` }
        : { ok: false, reason: "workdir_missing", detail: `${shown} is not a directory` };
    }
    throw error;
  }
}
