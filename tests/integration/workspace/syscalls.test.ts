import {
  closeSync,
  mkdirSync,
  openSync,
  readFileSync,
  readlinkSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  createLibcSyscalls,
  createPathResolver,
  createUserWorkspaces,
  type FsSyscalls,
  type WorkspaceFs,
} from "../../../agent-host/workspace/index.ts";
import {
  AT_FDCWD,
  Errno,
  LOCK_EX,
  LOCK_NB,
  LOCK_UN,
  O_CLOEXEC,
  O_DIRECTORY,
  O_PATH,
  RENAME_NOREPLACE,
} from "../../../agent-host/workspace/syscalls.ts";
import { freshDataRoot } from "../../support/data-root.ts";
import { expectCode, namesIn, UID, WORKDIR } from "./harness.ts";

// The seam itself, on real files. Where a test needs a kernel or filesystem this machine
// does not have (no openat2, no RENAME_NOREPLACE as on NFS), it wraps the real syscalls and
// changes only that one answer, so the fallback code runs against real files.

describe("libc syscalls", () => {
  const sys = createLibcSyscalls();
  let root: Awaited<ReturnType<typeof freshDataRoot>>;
  let dirfd: number;
  beforeEach(async () => {
    root = await freshDataRoot();
    mkdirSync(join(root.path, "box/inner"), { recursive: true });
    writeFileSync(join(root.path, "box/file"), "x");
    symlinkSync("inner", join(root.path, "box/link"));
    const opened = sys.openat(AT_FDCWD, join(root.path, "box"), O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (!opened.ok) throw new Error(`open box: errno ${opened.errno}`);
    dirfd = opened.value;
  });
  afterEach(async () => {
    sys.close(dirfd);
    await root.remove();
  });

  it("openat2 refuses escapes (EXDEV) and symlinks (ELOOP) as errno values", () => {
    const how = { flags: O_PATH | O_CLOEXEC, mode: 0, resolve: 0x08 | 0x04 | 0x02 };
    expect(sys.openat2(dirfd, "..", how)).toEqual({ ok: false, errno: Errno.EXDEV });
    expect(sys.openat2(dirfd, "link/x", how)).toEqual({ ok: false, errno: Errno.ELOOP });
    expect(sys.openat2(dirfd, "missing", how)).toEqual({ ok: false, errno: Errno.ENOENT });
    const ok = sys.openat2(dirfd, "inner", how);
    expect(ok.ok).toBe(true);
    if (ok.ok) sys.close(ok.value);
  });

  it("both resolvers refuse `..` and symlinks before or in the kernel", () => {
    for (const kind of ["openat2", "walk"] as const) {
      const resolver = createPathResolver(sys, { kind });
      expect(resolver.open(dirfd, [".."], O_PATH)).toEqual({ ok: false, errno: Errno.EXDEV });
      expect(resolver.open(dirfd, ["inner", ".."], O_PATH)).toEqual({
        ok: false,
        errno: Errno.EXDEV,
      });
      expect(resolver.open(dirfd, ["a/b"], O_PATH)).toEqual({ ok: false, errno: Errno.EINVAL });
      const viaLink = resolver.open(dirfd, ["link", "x"], O_PATH);
      expect(viaLink.ok).toBe(false);
      expect([Errno.ELOOP, Errno.ENOTDIR]).toContain(viaLink.ok ? 0 : viaLink.errno);
    }
  });

  it("flock is exclusive across descriptors with LOCK_NB", () => {
    const a = openSync(join(root.path, "box/file"), "r");
    const b = openSync(join(root.path, "box/file"), "r");
    try {
      expect(sys.flock(a, LOCK_EX | LOCK_NB)).toEqual({ ok: true, value: true });
      expect(sys.flock(b, LOCK_EX | LOCK_NB)).toEqual({ ok: false, errno: Errno.EWOULDBLOCK });
      expect(sys.flock(a, LOCK_UN).ok).toBe(true);
      expect(sys.flock(b, LOCK_EX | LOCK_NB).ok).toBe(true);
    } finally {
      closeSync(a);
      closeSync(b);
    }
  });

  it("reads directory names as bytes, bounded", () => {
    const all = sys.readdirAt(dirfd, 10);
    expect(all.ok && all.value.names.map(String).sort()).toEqual(["file", "inner", "link"]);
    const some = sys.readdirAt(dirfd, 2);
    expect(some.ok && some.value.truncated).toBe(true);
  });

  it("renameat2(RENAME_NOREPLACE) never replaces, not even a dangling symlink", () => {
    writeFileSync(join(root.path, "box/new"), "n");
    symlinkSync("nowhere", join(root.path, "box/dangling"));
    expect(sys.renameat2(dirfd, "new", dirfd, "dangling", RENAME_NOREPLACE)).toEqual({
      ok: false,
      errno: Errno.EEXIST,
    });
    expect(readlinkSync(join(root.path, "box/dangling"))).toBe("nowhere");
  });
});

describe("resolver choice", () => {
  const real = createLibcSyscalls();

  it("auto picks openat2 on this kernel, and walk where openat2 is missing or filtered", () => {
    expect(createPathResolver(real).kind).toBe("openat2");
    for (const errno of [Errno.ENOSYS, Errno.EPERM]) {
      const oldKernel: FsSyscalls = { ...real, openat2: () => ({ ok: false, errno }) };
      expect(createPathResolver(oldKernel).kind).toBe("walk");
      expect(() => createPathResolver(oldKernel, { kind: "openat2" })).toThrow(/not available/);
    }
  });
});

describe("fallbacks on real files", () => {
  let root: Awaited<ReturnType<typeof freshDataRoot>>;
  let fs: WorkspaceFs;
  let workdir: string;
  beforeEach(async () => {
    root = await freshDataRoot();
    workdir = join(root.path, "users", UID, "workspace", WORKDIR);
  });
  afterEach(async () => {
    fs.close();
    await root.remove();
  });

  async function open(sys: FsSyscalls): Promise<WorkspaceFs> {
    const users = createUserWorkspaces({
      dataRoot: root.path,
      sys,
      resolver: createPathResolver(sys),
    });
    return users.ensureManagedWorkdir(UID, WORKDIR);
  }

  it("a kernel without openat2 runs the whole layer on the walk", async () => {
    const real = createLibcSyscalls();
    fs = await open({ ...real, openat2: () => ({ ok: false, errno: Errno.ENOSYS }) });
    expect(fs.resolverKind).toBe("walk");
    await fs.writeFile("a/b.txt", "walk", { parents: true });
    expect((await fs.readFile("a/b.txt")).toString()).toBe("walk");
  });

  it("a filesystem without RENAME_NOREPLACE (NFS) stays no-clobber through linkat", async () => {
    const real = createLibcSyscalls();
    const calls = { link: 0 };
    fs = await open({
      ...real,
      renameat2: (a, b, c, d, flags) =>
        flags & RENAME_NOREPLACE
          ? { ok: false, errno: Errno.EINVAL }
          : real.renameat2(a, b, c, d, flags),
      linkat: (a, b, c, d, flags) => {
        calls.link++;
        return real.linkat(a, b, c, d, flags);
      },
    });
    await fs.writeFile("a.txt", "first");
    expect(calls.link).toBe(1);
    await expectCode(() => fs.writeFile("a.txt", "second"), "conflict");
    symlinkSync("nowhere", join(workdir, "dangling"));
    await expectCode(() => fs.writeFile("dangling", "x"), "conflict");
    await fs.writeBatch(
      "up",
      [
        { name: "x", source: "1" },
        { name: "y", source: "2" },
      ],
      { parents: true },
    );
    await fs.move("a.txt", "moved.txt");
    await expectCode(() => fs.move("moved.txt", "dangling"), "conflict");
    await fs.copy("up", "up2", { recursive: true });
    await expectCode(() => fs.copy("up", "up2", { recursive: true }), "conflict");
    expect(readFileSync(join(workdir, "moved.txt"), "utf8")).toBe("first");
    expect(readlinkSync(join(workdir, "dangling"))).toBe("nowhere");
    expect(namesIn(workdir)).toEqual(["dangling", "moved.txt", "up", "up2"]);
    expect(namesIn(join(workdir, "up2"))).toEqual(["x", "y"]);
  });
});
