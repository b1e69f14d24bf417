/**
 * A slot lent while a command of the run tree waits for an Execution Lease: `takeBack`
 * once the lease is granted (it resolves when the tree holds a slot again, or at once when
 * `signal` aborts), or `forgo` when the wait ended without a grant (the tree stays off the
 * slot count until another command of it takes one back or the run ends).
 */
export interface LentSlot {
  takeBack(signal: AbortSignal): Promise<void>;
  forgo(): void;
}

/** Lends the worker slot of a root run (by its run id); undefined for a run not in a slot. */
export type LendSlot = (rootRunId: string) => LentSlot | undefined;

interface Tree {
  /** Commands of the tree waiting for a lease now. */
  waiters: number;
  /** The tree's slot serves another run. */
  out: boolean;
}

/**
 * The slots lent by run trees waiting for an Execution Lease (issue 37 item 8, decision
 * 0141): a run whose command waits behind another run's command on the same Workdir does
 * nothing but wait, so its slot goes to the next waiting run meanwhile. A granted command
 * takes a slot back before it runs, ahead of any new claim (`returning`), and only a regular
 * slot: the node never executes more than its slots. A slot-holder never waits for a lease
 * (it lends first), so the return always comes: a slot frees when a run ends or lends.
 */
export class LentSlots {
  readonly #trees = new Map<string, Tree>();
  readonly #returning: Array<{ readonly tree: Tree; readonly resume: () => void }> = [];
  readonly #freed: () => void;

  /** `freed`: a slot was lent, or a command waits to take one back: the owner fills. */
  constructor(freed: () => void) {
    this.#freed = freed;
  }

  /** Trees whose slot is lent now. */
  get out(): number {
    let n = 0;
    for (const tree of this.#trees.values()) if (tree.out) n++;
    return n;
  }

  /** True while a granted command waits for its slot: new claims wait behind it. */
  get returning(): boolean {
    return this.#returning.length > 0;
  }

  track(rootRunId: string): void {
    this.#trees.set(rootRunId, { waiters: 0, out: false });
  }

  untrack(rootRunId: string): void {
    const tree = this.#trees.get(rootRunId);
    this.#trees.delete(rootRunId);
    if (tree === undefined) return;
    for (let i = this.#returning.length - 1; i >= 0; i--) {
      const r = this.#returning[i];
      if (r?.tree === tree) this.#returning.splice(i, 1)[0]?.resume();
    }
  }

  lend(rootRunId: string): LentSlot | undefined {
    const tree = this.#trees.get(rootRunId);
    if (tree === undefined) return undefined;
    tree.waiters++;
    if (!tree.out) {
      tree.out = true;
      this.#freed();
    }
    let settled = false;
    return {
      takeBack: (signal) => {
        if (settled) return Promise.resolve();
        settled = true;
        tree.waiters--;
        return this.#takeBack(tree, signal);
      },
      forgo: () => {
        if (settled) return;
        settled = true;
        tree.waiters--;
      },
    };
  }

  /**
   * Gives slots back to granted commands, first come first served, while `hasRoom` says a
   * regular slot is free; called whenever one may have freed.
   */
  serve(hasRoom: () => boolean): void {
    while (true) {
      const next = this.#returning[0];
      if (next === undefined) return;
      // A sibling command took the tree's slot back meanwhile: no second slot is needed.
      if (next.tree.out && !hasRoom()) return;
      this.#returning.shift();
      next.tree.out = false;
      next.resume();
    }
  }

  #takeBack(tree: Tree, signal: AbortSignal): Promise<void> {
    // Another command of the tree took the slot back already: this one runs under it.
    if (!tree.out || signal.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const entry = {
        tree,
        resume: () => {
          signal.removeEventListener("abort", onAbort);
          resolve();
        },
      };
      const onAbort = () => {
        const at = this.#returning.indexOf(entry);
        if (at >= 0) this.#returning.splice(at, 1);
        resolve();
      };
      signal.addEventListener("abort", onAbort, { once: true });
      this.#returning.push(entry);
      this.#freed();
    });
  }
}
