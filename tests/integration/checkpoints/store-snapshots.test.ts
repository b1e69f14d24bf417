import { execFileSync } from "node:child_process";
import { randomUUID } from "node:crypto";
import {
  chmodSync,
  chownSync,
  closeSync,
  constants,
  lstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  writeFileSync,
} from "node:fs";
import { dirname, join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import {
  createSubvolumeSyscalls,
  detectSubvolumes,
  subvolumeWorkdirs,
} from "../../../agent-host/checkpoints/subvolumes.ts";
import {
  createLibcSyscalls,
  createPathResolver,
  createUserWorkspaces,
} from "../../../agent-host/workspace/index.ts";
import { plantTree } from "./agent-trees.ts";
import { OTHER_WORKDIR, type StoreEnv, setupStore, UID, WORKDIR } from "./checkpoint-fixture.ts";
import { treeManifest } from "./tree-manifest.ts";

/** The root directory of a btrfs subvolume (and of a snapshot, which is one). */
const SUBVOLUME_ROOT_INO = 256;

const isSubvolume = (path: string) => lstatSync(path).ino === SUBVOLUME_ROOT_INO;

/** Makes `name` in `dir` a subvolume, as an agent may (the ioctl needs no privilege). */
function agentSubvolume(dir: string, name: string): void {
  const fd = openSync(dir, constants.O_RDONLY | constants.O_DIRECTORY);
  try {
    const made = createSubvolumeSyscalls(createLibcSyscalls()).create(fd, name);
    if (!made.ok) throw new Error(`no subvolume: errno ${made.errno}`);
  } finally {
    closeSync(fd);
  }
}

// The btrfs data root (docs/decisions/0190): the rest of the checkpoint suite runs there
// too as `snapshot` mode; these are what only it has.
describe("checkpoints of a Workdir that is a btrfs subvolume", () => {
  let env: StoreEnv | undefined;
  afterEach(async () => {
    await env?.root.remove();
    env = undefined;
  });

  it("are one read-only snapshot each, which nothing can write and which is removed whole", async () => {
    env = await setupStore("snapshot");
    expect(isSubvolume(env.workdir)).toBe(true);
    plantTree(env.workdir);
    const id = randomUUID();
    const stats = await env.store.take(UID, WORKDIR, id, AbortSignal.timeout(60_000));
    expect(stats).toMatchObject({ files: 5, dirs: 3, bytes: 300_000 + 6 + 19 + 8, skipped: 0 });
    const taken = join(env.storeDir, id);
    expect(isSubvolume(taken)).toBe(true);
    expect(treeManifest(taken, true)).toEqual(treeManifest(env.workdir, true));
    // Read-only even for root: no write, no new name, no removal inside it.
    expect(() => writeFileSync(join(taken, "a.txt"), "changed")).toThrow(/EROFS/);
    expect(() => mkdirSync(join(taken, "new"))).toThrow(/EROFS/);
    expect(readdirSync(env.storeDir)).toEqual([id]);

    env.store.remove(UID, id);
    expect(readdirSync(env.storeDir)).toEqual([]);
    // The Workdir is untouched by the checkpoint and by its removal.
    expect(treeManifest(env.workdir).length).toBe(8);
  });

  it("copy a Workdir holding a nested subvolume file by file, the nested files with it", async () => {
    env = await setupStore("snapshot");
    plantTree(env.workdir);
    // A snapshot would show the nested subvolume as an empty directory.
    agentSubvolume(env.workdir, "nested");
    writeFileSync(join(env.workdir, "nested", "kept.txt"), "inside the nested subvolume\n");
    const id = randomUUID();
    const stats = await env.store.take(UID, WORKDIR, id, AbortSignal.timeout(60_000));
    expect(stats.files).toBe(6);
    const taken = join(env.storeDir, id);
    expect(isSubvolume(taken)).toBe(false);
    expect(treeManifest(taken)).toEqual(treeManifest(env.workdir));
    // Nothing left of the snapshot that was tried first.
    expect(readdirSync(env.storeDir)).toEqual([id]);
  });

  it("copy a Workdir that is a plain directory file by file", async () => {
    env = await setupStore("snapshot");
    const other = env.path(UID, OTHER_WORKDIR);
    mkdirSync(other, { recursive: true, mode: 0o700 });
    plantTree(other);
    const id = randomUUID();
    await env.store.take(UID, OTHER_WORKDIR, id, AbortSignal.timeout(60_000));
    expect(isSubvolume(join(env.storeDir, id))).toBe(false);
    expect(treeManifest(join(env.storeDir, id), true)).toEqual(treeManifest(other, true));
  });

  it("are off on a node that could not delete them (not root), and its probe leaves nothing", async () => {
    env = await setupStore("snapshot");
    const store = join(env.root.path, "checkpoints");
    // The sandbox user may reach the data root and owns it, as a non-root agent-host would.
    chmodSync(dirname(env.root.path), 0o711);
    chownSync(env.root.path, 1000, 1000);
    chownSync(store, 1000, 1000);
    const storeMadeMs = lstatSync(store).mtimeMs;
    const modules = (name: string) => new URL(`../../../agent-host/${name}`, import.meta.url).href;
    const probe = [
      `import { detectSubvolumes } from ${JSON.stringify(modules("checkpoints/subvolumes.ts"))};`,
      `import { createLibcSyscalls } from ${JSON.stringify(modules("workspace/index.ts"))};`,
      `const found = detectSubvolumes({ dataRoot: ${JSON.stringify(env.root.path)}, sys: createLibcSyscalls() }, "checkpoints");`,
      "console.log(found === undefined ? 'none' : 'found');",
    ].join("\n");
    const out = execFileSync(
      "setpriv",
      [
        "--reuid=1000",
        "--regid=1000",
        "--clear-groups",
        process.execPath,
        "--import",
        "tsx",
        "-e",
        probe,
      ],
      { encoding: "utf8", timeout: 60_000 },
    );
    expect(out.trim()).toBe("none");
    // It got as far as making one: the ioctl needs no privilege, only its deletion does.
    expect(lstatSync(store).mtimeMs).toBeGreaterThan(storeMadeMs);
    // The probe subvolume it could make but not delete as one was removed as a directory.
    expect(readdirSync(store).some((name) => name.startsWith(".probe-"))).toBe(false);
  });

  it("WORKDIR_SUBVOLUMES=off: new Workdirs are plain directories; snapshots taken before still go whole", async () => {
    env = await setupStore("snapshot");
    plantTree(env.workdir);
    const id = randomUUID();
    await env.store.take(UID, WORKDIR, id, AbortSignal.timeout(60_000));
    expect(isSubvolume(join(env.storeDir, id))).toBe(true);
    const sys = createLibcSyscalls();
    const subvolumes = detectSubvolumes({ dataRoot: env.root.path, sys }, "checkpoints");
    expect(subvolumes).toBeDefined();
    expect(subvolumeWorkdirs("off", subvolumes).makeWorkdir).toBeUndefined();
    expect(subvolumeWorkdirs("auto", subvolumes).makeWorkdir).toBeDefined();
    const workspaces = createUserWorkspaces({
      dataRoot: env.root.path,
      sys,
      resolver: createPathResolver(sys),
      ...subvolumeWorkdirs("off", subvolumes),
    });
    const path = "projects/5e9f7a1e-1b2c-4d3e-8f90-123456789abc";
    (await workspaces.ensureManagedWorkdir(UID, path)).close();
    expect(isSubvolume(env.path(UID, path))).toBe(false);
    // The store keeps its subvolume calls: the read-only snapshot is still removed whole.
    env.store.remove(UID, id);
    expect(readdirSync(env.storeDir)).toEqual([]);
  });

  it("start from a managed Workdir the node makes a subvolume, 0700 and the sandbox user's", async () => {
    env = await setupStore("snapshot");
    const sys = createLibcSyscalls();
    const subvolumes = createSubvolumeSyscalls(sys);
    const workspaces = createUserWorkspaces({
      dataRoot: env.root.path,
      sys,
      resolver: createPathResolver(sys),
      owner: { uid: 1000, gid: 1000 },
      makeWorkdir: (fd, name) => subvolumes.create(fd, name),
    });
    const path = "projects/4e9f7a1e-1b2c-4d3e-8f90-123456789abc";
    (await workspaces.ensureManagedWorkdir("carol", path)).close();
    // Again: it exists, nothing is made twice.
    (await workspaces.ensureManagedWorkdir("carol", path)).close();
    const made = lstatSync(env.path("carol", path));
    expect(made.ino).toBe(SUBVOLUME_ROOT_INO);
    expect(made.mode & 0o7777).toBe(0o700);
    expect([made.uid, made.gid]).toEqual([1000, 1000]);
    // Its parent is a plain directory, as everywhere else.
    expect(isSubvolume(env.path("carol", "projects"))).toBe(false);
  });
});
