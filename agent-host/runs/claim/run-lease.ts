import { sql } from "drizzle-orm";
import type { Logger } from "pino";
import { abortable } from "../../../shared/async/abortable.ts";
import type { Db } from "../../../shared/db/client.ts";
import { agentRuns } from "../../../shared/db/schema.ts";
import type { RunSilence } from "../run-silence.ts";
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
  /**
   * The run's commands (decision 0148): with it, a whole TTL of silence while no command
   * is in the sandbox suspends the run instead of losing it, until a beat answers.
   */
  readonly silence?: RunSilence;
}

/**
 * The heartbeat of one claimed run: every `heartbeatIntervalMs` one fenced UPDATE moves
 * `lease_expires_at` to now() + TTL (database clock) and reads `cancel_requested`, so it is
 * both the lease and the fallback cancel poll when LISTEN is down.
 *
 * Zero rows means the run is not ours any more (the sweeper ended it, or it ended): the
 * lease is lost. A beat that fails or does not answer within one interval counts as
 * failed (it is not waited for: a hung connection must not stop the heartbeat, nor a
 * run's stop). Loss by silence is decided by a timer, not by the catch of a failed beat:
 * once no beat has succeeded for a whole TTL, the sweeper may already have ended the run,
 * so the worker assumes the lease lost and stops acting, even if every beat since hangs.
 * Unless no command of the run is in the sandbox (decision 0148): then it only suspends
 * the run's commands and keeps beating; the first beat that answers decides (a row: the
 * fence held, nobody took the run, it resumes; none: lost).
 */
export class RunLease {
  readonly #deps: RunLeaseDeps;
  #timer: NodeJS.Timeout | undefined;
  #lossTimer: NodeJS.Timeout | undefined;
  #stopped = false;
  #cancelSeen = false;
  #lostSeen = false;
  #beat: Promise<void> = Promise.resolve();

  constructor(deps: RunLeaseDeps) {
    this.#deps = deps;
  }

  /**
   * The first beat is awaited: a cancel that came before we started is seen at once.
   * With `claimed` (the claim's own UPDATE wrote the lease and returned the row) that
   * UPDATE was the first beat: one statement less on the way to a run's first command.
   */
  async start(claimed?: { readonly sentAt: number; readonly cancelRequested: boolean }) {
    if (claimed !== undefined) {
      this.#armLossTimer(claimed.sentAt);
      if (claimed.cancelRequested) {
        this.#cancelSeen = true;
        this.#deps.onCancelRequested();
      }
    } else {
      this.#armLossTimer();
      this.#beat = this.#beatOnce();
      await this.#beat;
    }
    this.#schedule();
  }

  /** Stops the heartbeat and waits for a beat in flight (bounded: it must not outlive the run). */
  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    if (this.#lossTimer !== undefined) clearTimeout(this.#lossTimer);
    await this.#beat;
  }

  #schedule(): void {
    if (this.#stopped || this.#lostSeen) return;
    this.#timer = setTimeout(() => {
      this.#beat = this.#beatOnce().finally(() => this.#schedule());
    }, this.#deps.heartbeatIntervalMs);
  }

  /**
   * (Re)starts the silence timer: a whole TTL from when the last good beat was sent (the
   * lease it wrote cannot end before that), so the worker gives up no later than the
   * lease the sweeper sees.
   */
  #armLossTimer(sentAt: number = performance.now()): void {
    if (this.#lossTimer !== undefined) clearTimeout(this.#lossTimer);
    const remainingMs = Math.max(0, this.#deps.leaseTtlMs - (performance.now() - sentAt));
    this.#lossTimer = setTimeout(() => {
      const { silence, logger, leaseTtlMs } = this.#deps;
      if (silence !== undefined && !silence.busy) {
        silence.suspend();
        logger.warn(
          { silent_ms: leaseTtlMs },
          "no run heartbeat succeeded for a whole lease; no command is running, so the run waits for the database (its next beat re-checks the fence)",
        );
        return;
      }
      logger.warn({ silent_ms: leaseTtlMs }, "no run heartbeat succeeded for a whole lease");
      this.#lost();
    }, remainingMs);
  }

  async #beatOnce(): Promise<void> {
    const { db, fence, leaseTtlMs, logger } = this.#deps;
    let rows: { cancelRequested: boolean }[];
    const sentAt = performance.now();
    try {
      rows = await abortable(
        db
          .update(agentRuns)
          .set({
            leaseExpiresAt: sql`now() + ${leaseTtlMs}::bigint * interval '1 millisecond'`,
          })
          .where(fencedRun(fence))
          .returning({ cancelRequested: agentRuns.cancelRequested }),
        AbortSignal.timeout(this.#deps.heartbeatIntervalMs),
        "run heartbeat",
      );
    } catch (error) {
      logger.warn({ err: error }, "run heartbeat failed");
      return;
    }
    if (this.#stopped || this.#lostSeen) return;
    const [row] = rows;
    if (row === undefined) {
      this.#lost();
      return;
    }
    if (this.#deps.silence?.suspended) {
      logger.info("the database answered again and the run is still ours; resuming");
      this.#deps.silence.resume();
    }
    this.#armLossTimer(sentAt);
    if (row.cancelRequested && !this.#cancelSeen) {
      this.#cancelSeen = true;
      this.#deps.onCancelRequested();
    }
  }

  #lost(): void {
    if (this.#lostSeen || this.#stopped) return;
    this.#lostSeen = true;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    if (this.#lossTimer !== undefined) clearTimeout(this.#lossTimer);
    this.#deps.logger.warn("run lease lost; stopping without writing anything more");
    this.#deps.onLost();
  }
}
