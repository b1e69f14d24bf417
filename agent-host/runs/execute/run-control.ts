import { RunSilence } from "../run-silence.ts";

/**
 * Why a run is being stopped before it ended by itself:
 * - `cancel`: the user asked (cancel_requested), or its parent run is being cancelled;
 * - `shutdown`: this agent-host is stopping and the grace period is over;
 * - `lease_lost`: the run is no longer ours; nothing more may be written for it.
 */
export type StopReason = "cancel" | "shutdown" | "lease_lost";

/** The abort reason a stopped run's signal carries (what `signal.throwIfAborted()` throws). */
export class RunStopped extends Error {
  override readonly name = "AbortError";
  readonly reason: StopReason;

  constructor(reason: StopReason) {
    super(`run stopped: ${reason}`);
    this.reason = reason;
  }
}

/**
 * The cancellation of one executing run: one AbortController whose signal reaches the
 * model call, the tool in flight (an exec is killed inside the sandbox) and the sub-agents,
 * plus the first reason it was stopped for, which decides how the run is recorded.
 */
export class RunControl {
  readonly #controller = new AbortController();
  /** Its commands and its heartbeat's silence (decision 0148). */
  readonly silence = new RunSilence();
  #reason: StopReason | undefined;
  #leaseLost = false;

  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  /** The first reason given; later ones do not change how the run ends. */
  get reason(): StopReason | undefined {
    return this.#reason;
  }

  /** True once the lease was lost, whatever stopped the run first. */
  get leaseLost(): boolean {
    return this.#leaseLost;
  }

  stop(reason: StopReason): void {
    if (reason === "lease_lost") this.#leaseLost = true;
    if (this.#reason !== undefined) return;
    this.#reason = reason;
    this.#controller.abort(new RunStopped(reason));
  }
}
