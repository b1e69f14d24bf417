import { setTimeout as sleep } from "node:timers/promises";

/** A use of a sandbox in flight; its signal fires when a destroy stops waiting for it. */
export type Pin = { signal: AbortSignal; release(): void };

type Closing = { promise: Promise<boolean>; settle(closedForGood: boolean): void };

/**
 * The in-flight uses of one sandbox generation in this process (docs/architecture.md §4.4).
 *
 * Exec and other operations hold a pin while they run. A closer (destroy, the idle
 * reaper) first blocks new pins, then drains the ones in flight. New pins do not fail
 * while a close is pending: they wait for its outcome, because a reaper's close can
 * still be called off (the sandbox was touched meanwhile), and then they proceed.
 */
export class PinSet {
  readonly #active = new Set<AbortController>();
  #closing: Closing | undefined;
  #closed = false;
  #drained: (() => void) | undefined;

  get pinned(): number {
    return this.#active.size;
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** A pin, or undefined when the sandbox is (or ends up) closed for good. */
  async pin(): Promise<Pin | undefined> {
    while (this.#closing) {
      if (await this.#closing.promise) return undefined;
    }
    if (this.#closed) return undefined;
    const controller = new AbortController();
    this.#active.add(controller);
    let released = false;
    return {
      signal: controller.signal,
      release: () => {
        if (released) return;
        released = true;
        this.#active.delete(controller);
        if (this.#active.size === 0) this.#drained?.();
      },
    };
  }

  /** Blocks new pins. False when another closer got here first or it is already closed. */
  beginClose(): boolean {
    if (this.#closing || this.#closed) return false;
    let settle: (closedForGood: boolean) => void = () => {};
    const promise = new Promise<boolean>((resolve) => {
      settle = resolve;
    });
    this.#closing = { promise, settle };
    return true;
  }

  /** Calls a close off: waiting pins proceed. */
  reopen(): void {
    const closing = this.#closing;
    this.#closing = undefined;
    closing?.settle(false);
  }

  /** Ends the close: waiting and future pins get undefined. */
  finishClose(): void {
    this.#closed = true;
    const closing = this.#closing;
    this.#closing = undefined;
    closing?.settle(true);
  }

  /** Resolves when the pending close (if any) is decided; true if closed for good. */
  async closeOutcome(): Promise<boolean> {
    return this.#closing ? this.#closing.promise : this.#closed;
  }

  /**
   * Waits for the pins in flight to be released; after `timeoutMs`, aborts them (an
   * exec kills its process on abort) and waits up to `cancelGraceMs` more.
   * Returns the number of pins still held at the end (0 = drained).
   */
  async drain(timeoutMs: number, cancelGraceMs: number): Promise<number> {
    if (!(await this.#waitIdle(timeoutMs))) {
      for (const controller of this.#active) controller.abort();
      await this.#waitIdle(cancelGraceMs);
    }
    return this.#active.size;
  }

  async #waitIdle(timeoutMs: number): Promise<boolean> {
    if (this.#active.size === 0) return true;
    const idle = new Promise<true>((resolve) => {
      this.#drained = () => resolve(true);
    });
    const timer = new AbortController();
    const result = await Promise.race([
      idle,
      sleep(timeoutMs, false, { signal: timer.signal }).catch(() => false),
    ]);
    timer.abort();
    this.#drained = undefined;
    return result;
  }
}
