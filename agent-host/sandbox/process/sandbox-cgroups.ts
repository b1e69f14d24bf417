import { constants, readdirSync, readFileSync } from "node:fs";
import { access, mkdir, readdir, readFile, rmdir, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";

// cgroup limits of process-tier sandboxes: memory, pids and CPU for the whole process
// tree of one sandbox generation (every exec of it), and one child group per exec so
// that an exec's processes can be found and killed from the host, whatever they did
// inside (double fork, setsid, a new session: cgroup membership is inherited and
// cannot be left without write access to cgroupfs, which the sandbox has none of).
//
// Two layouts: the unified v2 hierarchy when it carries the controllers (modern hosts),
// else the v1 controllers mounted one per directory (these machines: memory, pids and
// cpu under /sys/fs/cgroup/<controller>, a cgroup2 at /sys/fs/cgroup/unified without
// useful controllers). Each sandbox is `<root>/<parent>/<sandbox>`, each exec
// `<sandbox>/<exec>`; the sandbox's limits apply to its execs hierarchically.

const CGROUP_FS = "/sys/fs/cgroup";
const V1_CONTROLLERS = ["memory", "pids", "cpu"] as const;
const CPU_PERIOD_US = 100_000;
const KILL_ROUNDS_MAX = 200;
const KILL_ROUND_DELAY_MS = 5;

export type CgroupLimits = {
  memoryBytes: number;
  pidsLimit: number;
  /** Billionths of a CPU (2e9 = two CPUs). */
  nanoCpus: number;
};

export type CgroupVersion = "v1" | "v2";

/**
 * A group confirmed to hold no process (`survivors` = how many were still there after
 * every round of SIGKILL). Nothing joins it again: only agent-host (root) writes
 * cgroup.procs, and it never writes an exec's group twice. `removed` never rejects: a
 * group that could not be removed is left to the generation's destroy, which removes
 * its whole subtree.
 */
export type EmptiedGroup = { survivors: number; removed: Promise<{ error?: unknown }> };

/** A group killed until empty, and the removal of it, not yet started. */
type Emptied = { survivors: number; remove: () => Promise<void> };

/** The cgroup operations of the process tier; paths are names below the tier's parent group. */
export interface SandboxCgroups {
  readonly version: CgroupVersion;
  /** Creates the sandbox's group with its limits (idempotent). */
  createSandbox(sandbox: string, limits: CgroupLimits): Promise<void>;
  /** Whether the sandbox's group exists (it does from create until destroy). */
  sandboxExists(sandbox: string): Promise<boolean>;
  /** Creates an exec's group; returns the cgroup.procs files a process joins by writing its pid. */
  createExec(sandbox: string, exec: string): Promise<string[]>;
  /** Live pids of the group and everything below it. */
  pids(sandbox: string, exec?: string): Promise<number[]>;
  /** SIGKILLs everything in the group (repeatedly, until empty), then removes it. */
  kill(sandbox: string, exec?: string): Promise<{ survivors: number }>;
  /**
   * The same for an exec's group, but resolves once it is confirmed empty: its removal
   * (an rmdir per hierarchy) goes on in `removed`, off the exec's path (decision 0086).
   */
  emptyExec(sandbox: string, exec: string): Promise<EmptiedGroup>;
  /** Sandbox names that have a group (reconciliation after a restart). */
  list(): Promise<string[]>;
  /** Removes the (empty) parent group itself: a node or test that is gone for good. */
  removeParent(): Promise<void>;
}

/** Which layout this host has, or why neither is usable (preflight reports it). */
export async function detectCgroups(
  parent: string,
): Promise<{ ok: true; cgroups: SandboxCgroups } | { ok: false; missing: string }> {
  const v2Controllers = await readFile(join(CGROUP_FS, "cgroup.controllers"), "utf8").catch(
    () => undefined,
  );
  if (v2Controllers !== undefined) {
    const have = v2Controllers.trim().split(/\s+/);
    const lacking = ["memory", "pids", "cpu"].filter((c) => !have.includes(c));
    if (lacking.length > 0) {
      return { ok: false, missing: `cgroup v2 lacks the ${lacking.join(", ")} controller(s)` };
    }
    return { ok: true, cgroups: new CgroupsV2(join(CGROUP_FS, parent)) };
  }
  for (const controller of V1_CONTROLLERS) {
    const dir = join(CGROUP_FS, controller);
    const writable = await access(dir, constants.W_OK).then(
      () => true,
      () => false,
    );
    if (!writable) {
      return {
        ok: false,
        missing: `cgroup v1 controller ${controller} is not mounted writable at ${dir}`,
      };
    }
  }
  return { ok: true, cgroups: new CgroupsV1(parent) };
}

class CgroupsV1 implements SandboxCgroups {
  readonly version = "v1";
  readonly #parent: string;

  constructor(parent: string) {
    this.#parent = parent;
  }

  #dir(controller: string, ...names: string[]): string {
    return join(CGROUP_FS, controller, this.#parent, ...names);
  }

  async createSandbox(sandbox: string, limits: CgroupLimits): Promise<void> {
    // The three controllers are independent hierarchies: each is made and limited at once
    // (decision 0061); within one, the writes keep their order.
    const memory = async () => {
      const dir = this.#dir("memory", sandbox);
      await mkdir(dir, { recursive: true });
      await writeFile(join(dir, "memory.limit_in_bytes"), String(limits.memoryBytes));
      // memory+swap equal to memory: no swap, so the limit is real (where swap
      // accounting is compiled in; without it there is no swap to account). After the
      // memory limit: the kernel refuses a memsw limit below it.
      await writeFile(join(dir, "memory.memsw.limit_in_bytes"), String(limits.memoryBytes)).catch(
        (e: NodeJS.ErrnoException) => {
          if (e.code !== "ENOENT") throw e;
        },
      );
    };
    const pids = async () => {
      const dir = this.#dir("pids", sandbox);
      await mkdir(dir, { recursive: true });
      await writeFile(join(dir, "pids.max"), String(limits.pidsLimit));
    };
    const cpu = async () => {
      const dir = this.#dir("cpu", sandbox);
      await mkdir(dir, { recursive: true });
      await writeFile(join(dir, "cpu.cfs_period_us"), String(CPU_PERIOD_US));
      await writeFile(join(dir, "cpu.cfs_quota_us"), String(quotaUs(limits.nanoCpus)));
    };
    const made = await Promise.allSettled([memory(), pids(), cpu()]);
    const failed = made.find((m) => m.status === "rejected");
    if (failed) throw failed.reason;
  }

  async sandboxExists(sandbox: string): Promise<boolean> {
    return exists(this.#dir("pids", sandbox));
  }

  async createExec(sandbox: string, exec: string): Promise<string[]> {
    // One group per controller, made at once (decision 0028); a half-made set is removed.
    const dirs = V1_CONTROLLERS.map((c) => this.#dir(c, sandbox, exec));
    const made = await Promise.allSettled(dirs.map((dir) => mkdir(dir)));
    const failed = made.find((m) => m.status === "rejected");
    if (failed) {
      await Promise.all(dirs.map((dir) => removeTree(dir).catch(() => {})));
      throw failed.reason;
    }
    return dirs.map((dir) => join(dir, "cgroup.procs"));
  }

  pids(sandbox: string, exec?: string): Promise<number[]> {
    // The pids hierarchy holds every process of the sandbox (each exec joins all three).
    return Promise.resolve(treePidsSync(this.#dir("pids", sandbox, ...(exec ? [exec] : []))));
  }

  kill(sandbox: string, exec?: string): Promise<{ survivors: number }> {
    return removedOnce(this.#empty([sandbox, ...(exec ? [exec] : [])]));
  }

  emptyExec(sandbox: string, exec: string): Promise<EmptiedGroup> {
    return removedAfter(this.#empty([sandbox, exec]));
  }

  /** Kills until empty (the pids hierarchy holds every process); removal is the caller's. */
  async #empty(names: string[]): Promise<Emptied> {
    const survivors = await killTree(this.#dir("pids", ...names));
    const remove = async () => {
      await Promise.all(V1_CONTROLLERS.map((c) => removeTree(this.#dir(c, ...names))));
    };
    return { survivors, remove };
  }

  async list(): Promise<string[]> {
    return subgroups(this.#dir("pids"));
  }

  async removeParent(): Promise<void> {
    for (const c of V1_CONTROLLERS) await removeTree(this.#dir(c));
  }
}

class CgroupsV2 implements SandboxCgroups {
  readonly version = "v2";
  readonly #base: string;

  constructor(base: string) {
    this.#base = base;
  }

  async createSandbox(sandbox: string, limits: CgroupLimits): Promise<void> {
    // v2 has no processes in inner groups: limits go on the sandbox, processes in execs.
    await mkdir(this.#base, { recursive: true });
    await enableControllers(join(this.#base, ".."));
    const dir = join(this.#base, sandbox);
    await mkdir(dir, { recursive: true });
    await enableControllers(this.#base);
    await writeFile(join(dir, "memory.max"), String(limits.memoryBytes));
    await writeFile(join(dir, "memory.swap.max"), "0").catch(() => {});
    await writeFile(join(dir, "pids.max"), String(limits.pidsLimit));
    await writeFile(join(dir, "cpu.max"), `${quotaUs(limits.nanoCpus)} ${CPU_PERIOD_US}`);
  }

  sandboxExists(sandbox: string): Promise<boolean> {
    return exists(join(this.#base, sandbox));
  }

  async createExec(sandbox: string, exec: string): Promise<string[]> {
    const dir = join(this.#base, sandbox, exec);
    await mkdir(dir);
    return [join(dir, "cgroup.procs")];
  }

  pids(sandbox: string, exec?: string): Promise<number[]> {
    return Promise.resolve(treePidsSync(join(this.#base, sandbox, ...(exec ? [exec] : []))));
  }

  kill(sandbox: string, exec?: string): Promise<{ survivors: number }> {
    return removedOnce(this.#empty([sandbox, ...(exec ? [exec] : [])]));
  }

  emptyExec(sandbox: string, exec: string): Promise<EmptiedGroup> {
    return removedAfter(this.#empty([sandbox, exec]));
  }

  async #empty(names: string[]): Promise<Emptied> {
    const dir = join(this.#base, ...names);
    // cgroup.kill (Linux 5.14) kills the whole subtree atomically; the loop below then
    // only confirms, and covers older kernels.
    await writeFile(join(dir, "cgroup.kill"), "1").catch(() => {});
    return { survivors: await killTree(dir), remove: () => removeTree(dir) };
  }

  list(): Promise<string[]> {
    return subgroups(this.#base);
  }

  removeParent(): Promise<void> {
    return removeTree(this.#base);
  }
}

/** Lets the children of `parent` use the three controllers (already on: a no-op). */
async function enableControllers(parent: string): Promise<void> {
  await writeFile(join(parent, "cgroup.subtree_control"), "+memory +pids +cpu");
}

/** kill(): the group emptied, then removed; a failed removal is the caller's error. */
async function removedOnce(emptied: Promise<Emptied>): Promise<{ survivors: number }> {
  const { survivors, remove } = await emptied;
  await remove();
  return { survivors };
}

/** emptyExec(): the group emptied; its removal goes on in `removed`, which never rejects. */
async function removedAfter(emptied: Promise<Emptied>): Promise<EmptiedGroup> {
  const { survivors, remove } = await emptied;
  return { survivors, removed: settled(remove()) };
}

function settled(work: Promise<unknown>): Promise<{ error?: unknown }> {
  return work.then(
    () => ({}),
    (error: unknown) => ({ error }),
  );
}

function quotaUs(nanoCpus: number): number {
  return Math.max(1000, Math.round((nanoCpus / 1e9) * CPU_PERIOD_US));
}

async function exists(path: string): Promise<boolean> {
  return stat(path).then(
    () => true,
    () => false,
  );
}

async function subgroups(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
  return entries.filter((e) => e.isDirectory()).map((e) => e.name);
}

/**
 * Every pid in the group and its children, read synchronously: cgroupfs files are filled
 * by the kernel from memory (no disk, no lock held across an RCU grace period), and each
 * thread-pool round trip cost a scheduling delay on a loaded host (decision 0086, as
 * procfs in 0028). Only reads: the rmdirs stay asynchronous (cgroup_mutex may be held by
 * a join waiting for RCU).
 */
function treePidsSync(dir: string): number[] {
  // Unreadable (gone: ENOENT) counts as empty.
  const text = orElse(() => readFileSync(join(dir, "cgroup.procs"), "utf8"), "");
  const children = orElse(
    () =>
      readdirSync(dir, { withFileTypes: true })
        .filter((e) => e.isDirectory())
        .map((e) => e.name),
    [],
  );
  const own = text
    .split("\n")
    .filter((line) => line !== "")
    .map(Number);
  return [...own, ...children.flatMap((name) => treePidsSync(join(dir, name)))];
}

function orElse<T>(read: () => T, fallback: T): T {
  try {
    return read();
  } catch {
    return fallback;
  }
}

/** Kills until the group and its children hold no process; returns how many remain. */
async function killTree(dir: string): Promise<number> {
  for (let round = 0; round < KILL_ROUNDS_MAX; round++) {
    const pids = treePidsSync(dir);
    if (pids.length === 0) return 0;
    for (const pid of pids) {
      try {
        process.kill(pid, "SIGKILL");
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== "ESRCH") throw error;
      }
    }
    // A killed process leaves its group only once the kernel has torn it down.
    await sleep(KILL_ROUND_DELAY_MS);
  }
  return treePidsSync(dir).length;
}

async function removeTree(dir: string): Promise<void> {
  // rmdir first: an exec's group has no child group (nothing inside can write cgroupfs),
  // so one round trip instead of a listing and then the rmdir (decision 0061). EBUSY
  // means child groups: those go first, then the rmdir again.
  const removed = await rmdir(dir).then(
    () => true,
    (e: NodeJS.ErrnoException) => {
      if (e.code === "ENOENT") return true;
      if (e.code === "EBUSY" || e.code === "ENOTEMPTY") return false;
      throw e;
    },
  );
  if (removed) return;
  await Promise.all((await subgroups(dir)).map((name) => removeTree(join(dir, name))));
  await rmdir(dir).catch((e: NodeJS.ErrnoException) => {
    if (e.code !== "ENOENT") throw e;
  });
}
