import { randomUUID } from "node:crypto";
import { readdir, readFile, stat } from "node:fs/promises";
import type { Logger } from "pino";
import type { LabelSource } from "../instance/container-labels.ts";
import type { OpenedMountDirs } from "../instance/open-mount-dirs.ts";
import type { SandboxPool } from "../sandbox-pool.ts";
import { PROCESS_ID_PREFIX } from "../sandbox-tier.ts";
import { SANDBOX_UID } from "./bwrap-args.ts";
import { type GenerationDirs, mountPoints } from "./generation-dirs.ts";

/** Blanks are named apart from generations (`process-<sandbox id>-g<n>`, a uuid id). */
const BLANK_PREFIX = `${PROCESS_ID_PREFIX}pool-`;
/** rwx for nobody but the group (its bwrap) to search: what createBlank leaves. */
const BLANK_DIR_MODE = 0o010;
/** The longest a blank waits for a new generation's first sandbox to be built first. */
const QUIET_WAIT_MAX_MS = 5_000;

export type GenerationPoolDeps = {
  dirs: GenerationDirs;
  logger: Logger;
  /** The most blanks kept ready (0: no pool). Each counts in the node's tmpfs budget. */
  size: number;
};

type Blank = { id: string; epoch: number };

/**
 * The process tier's warm pool (decision 0185): generations' uid-independent parts (the
 * /tmp and home tmpfs, the user namespace and its holder's owner uid, the directory
 * modes) made ahead, so a new thread's create only writes labels, renames the blank to
 * its generation id and binds the uid's directories. A blank is handed out once (taken
 * from the list with no await before it is out), checked at take time (mounts in the
 * mount table, both tmpfs empty, the owner file, the modes, made in this epoch), and
 * never comes back: a destroyed generation is removed, not recycled.
 */
export class GenerationPool implements SandboxPool {
  readonly #deps: GenerationPoolDeps;
  readonly #ready: Blank[] = [];
  /** Blanks being made, with their removal once made when the epoch moved on. */
  readonly #making = new Set<Promise<void>>();
  /** Bumped by drain(): a blank made in an earlier epoch is never handed out. */
  #epoch = 0;
  /** What a blank's making waits for first: the last new generations' standby builds. */
  #quiet: Promise<unknown> = Promise.resolve();

  constructor(deps: GenerationPoolDeps) {
    this.#deps = deps;
  }

  held(): number {
    return this.#ready.length + this.#making.size;
  }

  async fill(room: number): Promise<void> {
    const wanted = Math.min(this.#deps.size - this.held(), room);
    const made: Array<Promise<void>> = [];
    for (let i = 0; i < wanted; i++) made.push(this.#makeOne());
    await Promise.all(made);
  }

  /**
   * A verified blank adopted as generation `id` for the uid of `dirs`; false when none was
   * ready or every ready one failed its check (each such one is removed): the caller then
   * creates the generation in full.
   */
  async take(id: string, labels: LabelSource, dirs: OpenedMountDirs): Promise<boolean> {
    for (let blank = this.#ready.shift(); blank; blank = this.#ready.shift()) {
      // A check that cannot be made (the mount table unreadable) is a fault too.
      const fault = await this.#check(blank).catch((error: unknown) => String(error));
      if (fault === undefined) {
        // A failure half-way leaves the blank (not yet renamed) or `id` (the caller's).
        await this.#deps.dirs.adopt(blank.id, id, labels, dirs).catch(async (error: unknown) => {
          await this.#remove(blank.id);
          throw error;
        });
        return true;
      }
      this.#deps.logger.warn({ blank: blank.id, fault }, "pooled process sandbox discarded");
      await this.#remove(blank.id);
    }
    return false;
  }

  async release(count: number): Promise<number> {
    const gone = this.#ready.splice(0, count);
    // Blanks still being made count in the budget too: a create waits for them to give
    // way rather than be refused for them.
    if (gone.length < count && this.#making.size > 0) {
      await Promise.all(this.#making);
      gone.push(...this.#ready.splice(0, count - gone.length));
    }
    await Promise.all(gone.map((b) => this.#remove(b.id)));
    return gone.length;
  }

  async drain(): Promise<void> {
    this.#epoch++;
    const gone = this.#ready.splice(0);
    await Promise.all([...gone.map((b) => this.#remove(b.id)), ...this.#making]);
    // Blanks of a process that ended without draining (a crash): never handed out. Only a
    // node that keeps a pool looks (one pool per state directory, as per node).
    if (this.#deps.size === 0) return;
    const left = (await this.#deps.dirs.list()).filter((name) => name.startsWith(BLANK_PREFIX));
    await Promise.all(left.map((name) => this.#remove(name)));
  }

  /**
   * Blanks started from now on are made once `work` settles (at most QUIET_WAIT_MAX_MS):
   * a new generation's first sandbox is built beside its run's lease statement (decision
   * 0088), and a refill started by that create must not take the CPU it needs.
   */
  after(work: Promise<unknown>): void {
    if (this.#deps.size === 0) return;
    const bounded = Promise.race([
      work.catch(() => {}),
      new Promise((resolve) => setTimeout(resolve, QUIET_WAIT_MAX_MS).unref()),
    ]);
    this.#quiet = Promise.all([this.#quiet, bounded]);
  }

  async settled(): Promise<void> {
    while (this.#making.size > 0) await Promise.all(this.#making);
  }

  #makeOne(): Promise<void> {
    const blank = { id: `${BLANK_PREFIX}${randomUUID()}`, epoch: this.#epoch };
    // Counted in held() from here on (the budget's view), made once the node is quiet.
    const making: Promise<void> = this.#quiet
      .then(() => this.#deps.dirs.createBlank(blank.id))
      .then(
        async () => {
          // Drained while it was made: removed, not offered.
          if (blank.epoch === this.#epoch) this.#ready.push(blank);
          else await this.#remove(blank.id);
        },
        async (error: unknown) => {
          this.#deps.logger.warn(
            { err: error, blank: blank.id },
            "pooled process sandbox not made",
          );
          await this.#remove(blank.id);
        },
      )
      .finally(() => this.#making.delete(making));
    this.#making.add(making);
    return making;
  }

  /** Why a blank must not be handed out, or undefined when it is as createBlank left it. */
  async #check(blank: Blank): Promise<string | undefined> {
    if (blank.epoch !== this.#epoch) return "made before the pool was drained";
    const parts = this.#deps.dirs.blankParts(blank.id);
    const [points, ownerText, modes, tmp, home] = await Promise.all([
      mountPoints(),
      readFile(parts.ownerFile, "utf8").catch(() => ""),
      Promise.all(parts.dirs.map((d) => stat(d).catch(() => undefined))),
      readdir(parts.tmp).catch(() => undefined),
      readdir(parts.home).catch(() => undefined),
    ]);
    for (const mount of [parts.tmp, parts.home, parts.userns]) {
      if (!points.has(mount)) return `${mount} is not mounted`;
    }
    const owner = Number(ownerText);
    if (!Number.isInteger(owner) || owner <= SANDBOX_UID) return "no namespace owner";
    for (const found of modes) {
      if (found?.uid !== 0 || found.gid !== owner) return "a directory changed owner";
      if ((found.mode & 0o7777) !== BLANK_DIR_MODE) return "a directory changed mode";
    }
    // Nothing may be in a tmpfs no command has run in yet.
    if (tmp?.length !== 0 || home?.length !== 0) return "a tmpfs is not empty";
    return undefined;
  }

  async #remove(id: string): Promise<void> {
    await this.#deps.dirs.remove(id).catch((error: unknown) => {
      this.#deps.logger.error({ err: error, blank: id }, "pooled process sandbox not removed");
    });
  }
}
