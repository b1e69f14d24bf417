/**
 * The key under which an Execution Lease covers a writable root (a Workdir, relative to
 * the UserWorkspace in normalizeWorkdirPath form; "" is the whole UserWorkspace).
 * "/" + path + "/" makes "one root is an ancestor of the other" the same test as "one key
 * is a prefix of the other", which Postgres can evaluate on the column: `projects/a` does
 * not overlap `projects/ab`, because "/projects/a/" is not a prefix of "/projects/ab/".
 */
export function leaseRootKey(workdirPath: string): string {
  return workdirPath === "" ? "/" : `/${workdirPath}/`;
}

/** Equal, or one an ancestor of the other (the lease's overlap rule). */
export function rootsOverlap(a: string, b: string): boolean {
  const ka = leaseRootKey(a);
  const kb = leaseRootKey(b);
  return ka.startsWith(kb) || kb.startsWith(ka);
}
