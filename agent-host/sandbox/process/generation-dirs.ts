import { constants } from "node:fs";
import {
  chmod,
  chown,
  type FileHandle,
  lstat,
  mkdir,
  open,
  readdir,
  readFile,
  rename,
  rm,
  writeFile,
} from "node:fs/promises";
import { join } from "node:path";
import type { FileView } from "../../../shared/paths/file-view.ts";
import {
  type LabelSource,
  parseSandboxLabels,
  sandboxLabels,
} from "../instance/container-labels.ts";
import { openDirBeneath } from "../instance/host-dir.ts";
import type { HostMounts } from "../instance/host-mounts.ts";
import type { OpenedMountDirs } from "../instance/open-mount-dirs.ts";
import { PROCESS_ID_PREFIX } from "../sandbox-tier.ts";
import type { SandboxSources } from "./bwrap-args.ts";
import { SANDBOX_GID, SANDBOX_UID } from "./bwrap-args.ts";
import type { ExecMounts } from "./prebuilt-sandbox.ts";
import { createSandboxUserns, type UsernsHolderDeps } from "./sandbox-userns.ts";

const LABELS_FILE = "labels.json";
/** The generation's user namespace (a bind mount of its nsfs inode) and its owner uid. */
const USERNS_FILE = "userns";
const USERNS_OWNER_FILE = "userns-owner";
const USERNS_TIMEOUT_MS = 15_000;
/** Mount points the exec's binds land on inside the persistent /home/gem tmpfs. */
const HOME_MOUNT_POINTS = ["user-data", "skills"] as const;

export type GenerationDirsDeps = {
  stateDir: string;
  /** mount(2) for the generation's binds and tmpfs, umount2(2) off the event loop at removal. */
  mounts: HostMounts;
  limits: { tmpSizeBytes: number; homeSizeBytes: number };
  /**
   * posix_spawn and the tools that start each generation's user namespace holder
   * (sandbox-userns.ts); without them this can open and remove generations, not create one.
   */
  holder?: Omit<UsernsHolderDeps, "mounts">;
};

/** The generation's directories, opened for one exec: what to bind, and what each must be. */
export type OpenedGeneration = {
  sources: SandboxSources;
  handles: ExecMounts;
  /** The generation's user namespace, for bwrap --userns, and the host uid owning it. */
  userns: { handle: FileHandle; owner: number };
  /** Closes every descriptor; a second call returns the first one's promise. */
  close(): Promise<void>;
};

/**
 * Host bind mounts of the uid's directories, one per generation (see create()); the
 * Workdir's own only in the `workdir` file view.
 */
const BINDS = {
  workspace: ["mnt", "user-data"],
  skills: ["mnt", "skills"],
  workdir: ["mnt", "workdir"],
} as const;
const TMPFS = { tmp: ["tmp"], home: ["home"] } as const;

function bindsOf(fileView: FileView): Array<keyof typeof BINDS> {
  return fileView === "workdir" ? ["workspace", "skills", "workdir"] : ["workspace", "skills"];
}

/**
 * The mounts a generation of this view has, in unmount order: the binds, then the tmpfs,
 * then the user namespace.
 */
function mountsOf(fileView: FileView): ReadonlyArray<readonly string[]> {
  return [...bindsOf(fileView).map((key) => BINDS[key]), TMPFS.tmp, TMPFS.home, [USERNS_FILE]];
}

/**
 * The host side of one process-tier generation: `<stateDir>/<id>/` (root only) with
 * its labels and two size-bounded tmpfs, `tmp` and `home`, that outlive each exec and
 * die with the generation (docs/architecture.md §3: private /tmp and /home/gem). The state
 * directory is node-local (/run by default), so a reboot clears it like it clears the
 * cgroups: the reconciler then finds the rows' sandboxes gone.
 */
export class GenerationDirs {
  readonly #deps: GenerationDirsDeps;

  constructor(deps: GenerationDirsDeps) {
    this.#deps = deps;
  }

  #path(id: string, ...rest: string[]): string {
    if (!id.startsWith(PROCESS_ID_PREFIX) || id.includes("/") || id.includes("..")) {
      throw new Error(`not a process sandbox id: ${JSON.stringify(id)}`);
    }
    return join(this.#deps.stateDir, id, ...rest);
  }

  /**
   * Makes the generation's directory: labels, the two tmpfs, and host bind mounts of
   * the UserWorkspace and skill projection made by root from the descriptors the driver
   * opened no-follow (mount(2) gets /proc/self/fd/<n> as is, and the kernel binds the
   * open directory itself: no path is resolved again), and the user namespace.
   * bwrap resolves its bind sources as paths (bubblewrap 0.8), by then as uid 1000 (the
   * sandbox user, host 1000 too) with one supplementary group: the namespace owner's own
   * gid, a random one no host account has (exec-trampoline.ts). Once the namespace exists
   * `<id>` and `mnt` become root's with that group, mode 0010 (search by the group only):
   * no other host account, not host uid 1000 nor another generation's bwrap, reaches the
   * generation's tmpfs or binds (decision 0106).
   */
  async create(id: string, labels: LabelSource, dirs: OpenedMountDirs): Promise<void> {
    const { holder } = this.#deps;
    if (!holder) throw new Error("GenerationDirs without a user namespace holder cannot create");
    await mkdir(this.#deps.stateDir, { recursive: true, mode: 0o711 });
    // A directory of this id is a create that crashed half-way: generations are never
    // reused, so it is debris.
    await this.remove(id);
    await mkdir(this.#path(id), { mode: 0o700 });
    // The labels before any mount: a generation with labels and not every mount is
    // recognisable (not mounted(), so not running) and removed; one with mounts and no
    // labels would be invisible to list().
    await settleAll([
      this.#writeLabels(this.#path(id), labels),
      mkdir(this.#path(id, "mnt"), { mode: 0o700 }),
    ]);
    let nsOwner: number | undefined;
    // The mounts and the user namespace do not depend on each other: made at once, each
    // waiting only for its own mount point (decision 0061). Every one settles before a
    // failure is reported, so the caller's remove() never races a mount still in flight.
    await settleAll([
      this.#bindAll(id, labels.fileView, dirs),
      this.#makeParts(id, holder).then((owner) => {
        nsOwner = owner;
      }),
    ]);
    if (nsOwner === undefined) throw new Error(`process sandbox ${id}: no namespace owner`);
    await passableOnlyBy(nsOwner, [this.#path(id), this.#path(id, "mnt")]);
  }

  /**
   * A generation's uid-independent parts made ahead under `blankId` (the warm pool,
   * decision 0185): the two tmpfs, the user namespace and the directory modes, with no
   * labels (list() and the reconciler do not see it) and no bind of any uid's files.
   */
  async createBlank(blankId: string): Promise<void> {
    const { holder } = this.#deps;
    if (!holder) throw new Error("GenerationDirs without a user namespace holder cannot create");
    await mkdir(this.#deps.stateDir, { recursive: true, mode: 0o711 });
    await this.remove(blankId);
    await mkdir(this.#path(blankId), { mode: 0o700 });
    await mkdir(this.#path(blankId, "mnt"), { mode: 0o700 });
    const owner = await this.#makeParts(blankId, holder);
    await passableOnlyBy(owner, [this.#path(blankId), this.#path(blankId, "mnt")]);
  }

  /**
   * Turns a blank the caller has verified (generation-pool.ts) into generation `id`: its
   * labels written inside it, then one rename(2) (the mounts below move with it), then the
   * uid's binds, as create() makes them. On a failure the caller removes `id`.
   */
  async adopt(
    blankId: string,
    id: string,
    labels: LabelSource,
    dirs: OpenedMountDirs,
  ): Promise<void> {
    await this.remove(id);
    await this.#writeLabels(this.#path(blankId), labels);
    await rename(this.#path(blankId), this.#path(id));
    await this.#bindAll(id, labels.fileView, dirs);
  }

  /** Paths of a blank's mounts, and its directories, for the pool's check at take time. */
  blankParts(blankId: string): {
    tmp: string;
    home: string;
    userns: string;
    ownerFile: string;
    dirs: string[];
  } {
    return {
      tmp: this.#path(blankId, ...TMPFS.tmp),
      home: this.#path(blankId, ...TMPFS.home),
      userns: this.#path(blankId, USERNS_FILE),
      ownerFile: this.#path(blankId, USERNS_OWNER_FILE),
      dirs: [this.#path(blankId), this.#path(blankId, "mnt")],
    };
  }

  #writeLabels(dir: string, labels: LabelSource): Promise<void> {
    return writeFile(join(dir, LABELS_FILE), JSON.stringify(sandboxLabels(labels)), {
      mode: 0o600,
    });
  }

  /** Host binds of the uid's directories (see create()), all at once. */
  #bindAll(id: string, fileView: FileView, dirs: OpenedMountDirs): Promise<void> {
    return settleAll(
      bindsOf(fileView).map(async (key) => {
        const target = this.#path(id, ...BINDS[key]);
        await mkdir(target, { mode: 0o700 });
        this.#deps.mounts.bind(`/proc/self/fd/${dirs[key].fd}`, target);
      }),
    );
  }

  /** The two tmpfs and the user namespace (with its owner file); resolves to the owner uid. */
  async #makeParts(id: string, holder: NonNullable<GenerationDirsDeps["holder"]>): Promise<number> {
    const owner = `uid=${SANDBOX_UID},gid=${SANDBOX_GID}`;
    const { mounts } = this.#deps;
    let nsOwner: number | undefined;
    await settleAll([
      // nosuid,nodev (HostMounts.tmpfs): nothing on them can gain privileges or reach a
      // device. exec stays allowed: agents run what they build under /tmp and ~ (as in
      // the container tier).
      mountTmpfs(
        mounts,
        this.#path(id, "tmp"),
        `size=${this.#deps.limits.tmpSizeBytes},mode=1777,${owner}`,
      ),
      mountTmpfs(
        mounts,
        this.#path(id, "home"),
        `size=${this.#deps.limits.homeSizeBytes},mode=0700,${owner}`,
      ),
      // Every exec of the generation joins this namespace (sandbox-userns.ts says why);
      // its owner file last, so open() sees an owner only for a pinned namespace.
      (async () => {
        nsOwner = await createSandboxUserns(
          this.#path(id, USERNS_FILE),
          { ...holder, mounts },
          AbortSignal.timeout(USERNS_TIMEOUT_MS),
        );
        await writeFile(this.#path(id, USERNS_OWNER_FILE), String(nsOwner), { mode: 0o600 });
      })(),
    ]);
    if (nsOwner === undefined) throw new Error(`process sandbox ${id}: no namespace owner`);
    return nsOwner;
  }

  async labels(id: string): Promise<LabelSource | undefined> {
    const text = await readFile(this.#path(id, LABELS_FILE), "utf8").catch(() => undefined);
    if (text === undefined) return undefined;
    try {
      return parseSandboxLabels(JSON.parse(text) as Record<string, string>);
    } catch {
      return undefined;
    }
  }

  /**
   * The generation's labels, and whether every mount of its view is still in place (a
   * reboot or a manual umount ends the generation); both read at once.
   */
  async state(id: string): Promise<{ labels: LabelSource; mounted: boolean } | undefined> {
    const [labels, points] = await Promise.all([this.labels(id), mountPoints()]);
    if (!labels) return undefined;
    const mounted = mountsOf(labels.fileView).every((parts) =>
      points.has(this.#path(id, ...parts)),
    );
    return { labels, mounted };
  }

  /**
   * Descriptors for one exec's binds, opened no-follow. The mount points inside home are
   * re-made first if an earlier exec replaced them (say, by a symlink): the exec itself
   * verifies where every bind landed, this only keeps a user from wedging their sandbox.
   */
  async open(
    id: string,
    runtimeDir: string,
    fileView: FileView,
  ): Promise<OpenedGeneration | undefined> {
    const opened: FileHandle[] = [];
    // Every open settles before any result is judged, so none is left open unseen.
    let failure: { error: unknown } | undefined;
    const settle = (promise: Promise<FileHandle | undefined>) =>
      promise.then(
        (handle) => {
          if (handle) opened.push(handle);
          return handle;
        },
        (error: unknown) => {
          failure ??= { error };
          return undefined;
        },
      );
    const openBelow = (parts: readonly string[]) =>
      settle(
        openDirBeneath(this.#deps.stateDir, [id, ...parts]).then((dir) =>
          dir.ok ? dir.handle : undefined,
        ),
      );
    try {
      // Independent opens, all at once: each is a thread-pool round trip, and on a
      // loaded host every sequential one costs a scheduling delay (decision 0028).
      const [workspace, skills, tmp, home, workdir, ownerText, ns, runtime] = await Promise.all([
        openBelow(BINDS.workspace),
        openBelow(BINDS.skills),
        openBelow(TMPFS.tmp),
        openBelow(TMPFS.home),
        fileView === "workdir" ? openBelow(BINDS.workdir) : undefined,
        readFile(this.#path(id, USERNS_OWNER_FILE), "utf8").catch(() => ""),
        // Absent: the generation is gone (undefined, like a missing bind).
        settle(
          open(this.#path(id, USERNS_FILE), constants.O_RDONLY | constants.O_NOFOLLOW).catch(
            () => undefined,
          ),
        ),
        settle(open(runtimeDir, constants.O_RDONLY | constants.O_DIRECTORY)),
      ]);
      if (failure) throw failure.error;
      if (!runtime) throw new Error(`the Runtime Assets directory ${runtimeDir} cannot be opened`);
      if (!workspace || !skills || !tmp || !home || !ns) return undefined;
      if (fileView === "workdir" && !workdir) return undefined;
      const owner = Number(ownerText);
      if (!Number.isInteger(owner) || owner <= SANDBOX_UID) return undefined;
      await Promise.all(HOME_MOUNT_POINTS.map((name) => remakeMountPoint(home, name)));
      const handles = { workspace, skills, runtime, tmp, home, ...(workdir ? { workdir } : {}) };
      opened.length = 0;
      let closed: Promise<void> | undefined;
      return {
        handles,
        userns: { handle: ns, owner },
        sources: {
          workspace: this.#path(id, ...BINDS.workspace),
          skills: this.#path(id, ...BINDS.skills),
          runtime: runtimeDir,
          tmp: this.#path(id, ...TMPFS.tmp),
          home: this.#path(id, ...TMPFS.home),
          ...(workdir ? { workdir: this.#path(id, ...BINDS.workdir) } : {}),
        },
        close() {
          closed ??= Promise.all([...Object.values(handles), ns].map((h) => h.close())).then(
            () => {},
          );
          return closed;
        },
      };
    } finally {
      await Promise.all(opened.map((h) => h.close()));
    }
  }

  /**
   * Unmounts and deletes the generation's directory (absent: nothing to do). The unmounts
   * are umount2(2) calls on a worker thread, one after another as the `umount` processes
   * were: nothing forks agent-host and nothing waits for RCU on its event loop (decision 0119).
   */
  async remove(id: string): Promise<void> {
    // Whatever its view (the labels may be what is broken), every mount it could have.
    const all = mountsOf("workdir");
    const points = await mountPoints();
    for (const parts of all) {
      const path = this.#path(id, ...parts);
      if (points.has(path)) await this.#deps.mounts.unmount(path);
    }
    const left = await mountPoints();
    if (all.some((parts) => left.has(this.#path(id, ...parts)))) {
      throw new Error(`process sandbox ${id}: a mount could not be removed; refusing to delete`);
    }
    await rm(this.#path(id), { recursive: true, force: true });
  }

  async list(): Promise<string[]> {
    const names = await readdir(this.#deps.stateDir).catch(() => []);
    return names.filter((n) => n.startsWith(PROCESS_ID_PREFIX));
  }
}

/**
 * The generation's own directories, searchable by its owner's group alone (its bwrap):
 * root's, so no one but root can list, change or chmod them.
 */
async function passableOnlyBy(gid: number, dirs: readonly string[]): Promise<void> {
  for (const dir of dirs) {
    await chown(dir, 0, gid);
    await chmod(dir, 0o010);
  }
}

/** A bind's mount point inside home, made again (0755, 1000:1000) unless it is a directory. */
async function remakeMountPoint(home: FileHandle, name: string): Promise<void> {
  const path = `/proc/self/fd/${home.fd}/${name}`;
  const found = await lstat(path).catch(() => undefined);
  if (found?.isDirectory()) return;
  if (found) await rm(path, { recursive: true, force: true });
  const made = await mkdir(path, { mode: 0o755 }).then(
    () => true,
    async (error: NodeJS.ErrnoException) => {
      // Made meanwhile by a concurrent open of the generation (the standby's, started at
      // create, runs beside the first exec's: decision 0086); its maker owns the chown.
      if (error.code === "EEXIST" && (await lstat(path)).isDirectory()) return false;
      throw error;
    },
  );
  if (made) await chown(path, SANDBOX_UID, SANDBOX_GID);
}

/** Mount points of agent-host's mount namespace (/proc/self/mountinfo field 5, unescaped). */
export async function mountPoints(): Promise<Set<string>> {
  const text = await readFile("/proc/self/mountinfo", "utf8");
  const points = new Set<string>();
  for (const line of text.split("\n")) {
    const field = line.split(" ")[4];
    if (field)
      points.add(
        field.replace(/\\([0-7]{3})/g, (_, o: string) =>
          String.fromCharCode(Number.parseInt(o, 8)),
        ),
      );
  }
  return points;
}
async function mountTmpfs(mounts: HostMounts, path: string, options: string): Promise<void> {
  await mkdir(path, { mode: 0o700 });
  mounts.tmpfs(path, options);
}

/** Waits for every promise; then throws the first failure, if any. */
async function settleAll(promises: Array<Promise<unknown>>): Promise<void> {
  const settled = await Promise.allSettled(promises);
  const failed = settled.find((s) => s.status === "rejected");
  if (failed) throw failed.reason;
}
