import { mkdtemp, rm, statfs } from "node:fs/promises";
import { join } from "node:path";
import { createLibcSyscalls } from "../../../agent-host/workspace/libc-syscalls.ts";
import {
  AT_FDCWD,
  Errno,
  LOCK_EX,
  LOCK_NB,
  O_CLOEXEC,
  O_CREAT,
  O_DIRECTORY,
  O_EXCL,
  O_RDONLY,
  O_RDWR,
  RENAME_NOREPLACE,
  RESOLVE_BENEATH,
  RESOLVE_NO_SYMLINKS,
} from "../../../agent-host/workspace/syscalls.ts";
import { type DoctorResult, fail, ok, skip, warn } from "./doctor-check.ts";

// The filesystem semantics the workspace layer relies on (docs/architecture.md §5, §6), probed
// on the data root itself, in a scratch directory removed afterwards.

/** statfs f_type magic numbers (linux/magic.h) of the filesystems worth naming. */
const FS_NAMES: Record<number, string> = {
  26985: "nfs",
  61267: "ext4",
  1481003842: "xfs",
  16914836: "tmpfs",
  2035054128: "overlayfs",
  2435016766: "btrfs",
  1702057286: "fuse",
  801189825: "zfs",
};

export async function filesystemChecks(dataRoot: string): Promise<DoctorResult[]> {
  let fsType: number;
  try {
    fsType = (await statfs(dataRoot)).type;
  } catch (error) {
    const reason = `cannot stat ${dataRoot} (${(error as NodeJS.ErrnoException).code}): mount the shared filesystem there or fix DATA_ROOT`;
    return [
      fail("data root", reason),
      ...["openat2", "no-clobber publish", "flock", "quota"].map((n) =>
        skip(`data root ${n}`, "data root unavailable"),
      ),
    ];
  }
  const fsName = FS_NAMES[fsType] ?? `type 0x${fsType.toString(16)}`;
  let scratch: string;
  try {
    scratch = await mkdtemp(join(dataRoot, ".workcell-doctor-"));
  } catch (error) {
    return [
      fail(
        "data root",
        `${dataRoot} (${fsName}) is not writable (${(error as NodeJS.ErrnoException).code})`,
      ),
    ];
  }
  try {
    const sys = createLibcSyscalls();
    return [
      ok("data root", `${dataRoot} is writable (${fsName})`),
      probeOpenat2(sys, scratch),
      probePublish(sys, scratch),
      probeFlock(sys, scratch, fsName),
      await probeQuota(dataRoot),
    ];
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}

type Sys = ReturnType<typeof createLibcSyscalls>;

function probeOpenat2(sys: Sys, dir: string): DoctorResult {
  const name = "data root openat2";
  const root = sys.openat(AT_FDCWD, dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (!root.ok) return fail(name, `cannot open the scratch directory (errno ${root.errno})`);
  try {
    const opened = sys.openat2(root.value, ".", {
      flags: O_RDONLY | O_DIRECTORY | O_CLOEXEC,
      mode: 0,
      resolve: RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS,
    });
    if (opened.ok) {
      sys.close(opened.value);
      return ok(name, "RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS resolution available");
    }
    if (opened.errno === Errno.ENOSYS) {
      return warn(name, "kernel lacks openat2 (< 5.6): the slower no-follow walk is used");
    }
    return fail(name, `openat2 failed (errno ${opened.errno})`);
  } finally {
    sys.close(root.value);
  }
}

function probePublish(sys: Sys, dir: string): DoctorResult {
  const name = "data root no-clobber publish";
  const root = sys.openat(AT_FDCWD, dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (!root.ok) return fail(name, `cannot open the scratch directory (errno ${root.errno})`);
  try {
    for (const file of ["existing", "temp"]) {
      const fd = sys.openat(root.value, file, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0o600);
      if (!fd.ok) return fail(name, `cannot create a file (errno ${fd.errno})`);
      sys.close(fd.value);
    }
    const renamed = sys.renameat2(root.value, "temp", root.value, "existing", RENAME_NOREPLACE);
    if (!renamed.ok && renamed.errno === Errno.EEXIST) {
      return ok(name, "renameat2(RENAME_NOREPLACE) refuses an existing name");
    }
    if (renamed.ok) return fail(name, "renameat2(RENAME_NOREPLACE) replaced an existing file");
    const linked = sys.linkat(root.value, "temp", root.value, "existing", 0);
    if (!linked.ok && linked.errno === Errno.EEXIST) {
      return ok(
        name,
        `no RENAME_NOREPLACE here (errno ${renamed.errno}); the link() fallback refuses an existing name`,
      );
    }
    return fail(
      name,
      `neither RENAME_NOREPLACE (errno ${renamed.errno}) nor link() (${linked.ok ? "replaced" : `errno ${linked.errno}`}) publishes without clobbering`,
    );
  } finally {
    sys.close(root.value);
  }
}

function probeFlock(sys: Sys, dir: string, fsName: string): DoctorResult {
  const name = "data root flock";
  const path = join(dir, "lock");
  const first = sys.openat(AT_FDCWD, path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600);
  const second = sys.openat(AT_FDCWD, path, O_RDWR | O_CLOEXEC);
  try {
    if (!first.ok || !second.ok) return fail(name, "cannot open a lock file");
    const held = sys.flock(first.value, LOCK_EX | LOCK_NB);
    if (!held.ok)
      return fail(
        name,
        `flock(LOCK_EX) failed (errno ${held.errno}): mount with lock support (NFS: not \`nolock\`/\`local_lock\`)`,
      );
    const contended = sys.flock(second.value, LOCK_EX | LOCK_NB);
    if (contended.ok)
      return fail(
        name,
        "a second open of the file got the same exclusive flock: locks do not exclude",
      );
    if (contended.errno !== Errno.EWOULDBLOCK)
      return fail(name, `flock contention gave errno ${contended.errno}`);
    // NFS forwards flock to the server as a whole-file lock (Linux ≥ 2.6.12), so it holds
    // between nodes; a local filesystem only excludes processes of this node.
    return fsName === "nfs"
      ? ok(name, "exclusive locks exclude; on NFS they are held by the server, across hosts")
      : warn(
          name,
          `exclusive locks exclude on this node; ${fsName} is local, so they do not span nodes (one node only, or use EFS/NFS)`,
        );
  } finally {
    if (first.ok) sys.close(first.value);
    if (second.ok) sys.close(second.value);
  }
}

async function probeQuota(dataRoot: string): Promise<DoctorResult> {
  const name = "data root quota";
  const { readFile } = await import("node:fs/promises");
  const mounts = (await readFile("/proc/self/mountinfo", "utf8")).split("\n");
  // The mount whose mount point is the longest prefix of the data root.
  let best: { point: string; options: string; fs: string } | undefined;
  for (const line of mounts) {
    const fields = line.split(" ");
    const point = fields[4];
    const sep = fields.indexOf("-");
    if (point === undefined || sep < 0) continue;
    const inside = dataRoot === point || dataRoot.startsWith(point === "/" ? "/" : `${point}/`);
    if (inside && (best === undefined || point.length > best.point.length)) {
      best = { point, options: `${fields[5]},${fields[sep + 3] ?? ""}`, fs: fields[sep + 1] ?? "" };
    }
  }
  if (best === undefined) return warn(name, "mount of the data root not found");
  if (/(^|,)(prjquota|pquota|pqnoenforce)(,|$)/.test(best.options)) {
    return ok(
      name,
      `project quotas on ${best.point} (${best.fs}): commands in sandboxes are held to the per-user quota too`,
    );
  }
  return warn(
    name,
    `no project quotas on ${best.point} (${best.fs}): bytes entering through the API are counted, commands in sandboxes are not held (mount ext4/xfs with prjquota)`,
  );
}
