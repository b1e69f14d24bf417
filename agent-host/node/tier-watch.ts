import type { Logger } from "pino";

export interface TierWatchDeps {
  /** The tiers this node was started with (its ready drivers); empty: no isolation at all. */
  readonly expected: readonly string[];
  /** One bounded probe of the tiers usable now (detectSandboxTiers' probe). */
  readonly probe: (signal: AbortSignal) => Promise<string[]>;
  /** Called once each time every expected tier answers again after one did not. */
  readonly onRecovered?: () => Promise<void>;
  readonly logger: Logger;
}

/**
 * What the node's sandbox tiers look like now, as the heartbeat and /readyz probe them
 * (docs/decisions/0058). While a tier the node started with does not answer (Docker's
 * socket gone or hung), the node is `degraded`: it claims no run of that tier (one
 * would only be handed back; runs of a tier that still answers go on, decision 0114),
 * /readyz says not ready, and its `nodes` row lists only the tiers that answer. When every tier answers again, `onRecovered` runs once (a reconcile pass that
 * removes containers a create left behind during the outage).
 *
 * A node with no tier at all is not degraded by this: it claims runs so they fail
 * `no_isolation_available` with a message, instead of waiting for ever.
 */
export class TierWatch {
  readonly #deps: TierWatchDeps;
  #degraded = false;
  #missing: readonly string[] = [];
  #recovering: Promise<void> = Promise.resolve();

  constructor(deps: TierWatchDeps) {
    this.#deps = deps;
  }

  /** True from a probe that missed an expected tier until one that found them all. */
  get degraded(): boolean {
    return this.#degraded;
  }

  /** The expected tiers the last probe did not find (empty when not degraded). */
  get missing(): readonly string[] {
    return this.#missing;
  }

  /**
   * Whether some tier the node started with still answers (decision 0114): the node then
   * goes on claiming the runs of those tiers; with none it claims nothing.
   */
  get someTierAnswers(): boolean {
    return this.#deps.expected.length === 0 || this.#missing.length < this.#deps.expected.length;
  }

  /** Probes, records the outcome and returns the usable tiers; a probe that throws found none. */
  async probe(signal: AbortSignal): Promise<string[]> {
    const usable = await this.#deps.probe(signal).catch(() => [] as string[]);
    const missing = this.#deps.expected.filter((t) => !usable.includes(t));
    const was = this.#degraded;
    this.#degraded = missing.length > 0;
    this.#missing = missing;
    if (!was && this.#degraded) {
      this.#deps.logger.warn(
        { missing },
        "sandbox tier unavailable: this node claims no runs of that tier",
      );
    } else if (was && !this.#degraded) {
      this.#deps.logger.info("sandbox tiers answer again: this node claims runs");
      this.#recovering = this.#recover();
    }
    return usable;
  }

  /** The recovery work in flight (tests and stop() await it). */
  settled(): Promise<void> {
    return this.#recovering;
  }

  async #recover(): Promise<void> {
    try {
      await this.#deps.onRecovered?.();
    } catch (error) {
      // The periodic reconciler is the backstop.
      this.#deps.logger.warn({ err: error }, "recovery after a sandbox tier outage failed");
    }
  }
}
