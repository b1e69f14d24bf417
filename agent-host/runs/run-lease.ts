import { sql } from "drizzle-orm";
import type { Logger } from "pino";
import type { Db } from "../../shared/db/client.ts";
import { agentRuns } from "../../shared/db/schema.ts";
import { fencedRun, type RunFence } from "./run-fence.ts";

export interface RunLeaseDeps {
  readonly db: Db;
  readonly fence: RunFence;
  readonly leaseTtlMs: number;
  readonly heartbeatIntervalMs: number;
  readonly logger: Logger;
  /** `cancel_requested` was seen set (called once). */
  readonly onCancelRequested: () => void;
  /** The lease is gone: the fence failed, or no heartbeat succeeded for a whole TTL (called once). */
  readonly onLost: () => void;
}

/**
 * The heartbeat of one claimed run: every `heartbeatIntervalMs` one fenced UPDATE moves
 * `lease_expires_at` to now() + TTL (database clock) and reads `cancel_requested`, so it is
 * both the lease and the fallback cancel poll when LISTEN is down.
 *
 * Zero rows means the run is not ours any more (the sweeper ended it, or it ended): the
 * lease is lost. Failing beats (database unreachable) are retried; once no beat has
 * succeeded for a whole TTL, the sweeper may already have ended the run, so the worker
 * must assume the lease lost and stop acting.
 */
export class RunLease {
  readonly #deps: RunLeaseDeps;
  #timer: NodeJS.Timeout | undefined;
  #stopped = false;
  #cancelSeen = false;
  #lostSeen = false;
  #lastOkAt = performance.now();
  #beat: Promise<void> = Promise.resolve();

  constructor(deps: RunLeaseDeps) {
    this.#deps = deps;
  }

  /** The first beat is awaited: a cancel that came before we started is seen at once. */
  async start(): Promise<void> {
    this.#lastOkAt = performance.now();
    await this.#beatOnce();
    this.#schedule();
  }

  /** Stops the heartbeat and waits for a beat in flight (it must not outlive the run). */
  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    await this.#beat;
  }

  #schedule(): void {
    if (this.#stopped || this.#lostSeen) return;
    this.#timer = setTimeout(() => {
      this.#beat = this.#beatOnce().finally(() => this.#schedule());
    }, this.#deps.heartbeatIntervalMs);
  }

  async #beatOnce(): Promise<void> {
    const { db, fence, leaseTtlMs, logger } = this.#deps;
    let rows: { cancelRequested: boolean }[];
    try {
      rows = await db
        .update(agentRuns)
        .set({
          leaseExpiresAt: sql`now() + ${leaseTtlMs}::bigint * interval '1 millisecond'`,
        })
        .where(fencedRun(fence))
        .returning({ cancelRequested: agentRuns.cancelRequested });
    } catch (error) {
      const silentMs = performance.now() - this.#lastOkAt;
      logger.warn({ err: error, silent_ms: Math.round(silentMs) }, "run heartbeat failed");
      if (silentMs >= leaseTtlMs) this.#lost();
      return;
    }
    if (this.#stopped) return;
    const [row] = rows;
    if (row === undefined) {
      this.#lost();
      return;
    }
    this.#lastOkAt = performance.now();
    if (row.cancelRequested && !this.#cancelSeen) {
      this.#cancelSeen = true;
      this.#deps.onCancelRequested();
    }
  }

  #lost(): void {
    if (this.#lostSeen || this.#stopped) return;
    this.#lostSeen = true;
    this.#deps.logger.warn("run lease lost; stopping without writing anything more");
    this.#deps.onLost();
  }
}
