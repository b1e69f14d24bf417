import type { Logger } from "pino";
import type { Db } from "../../../shared/db/client.ts";
import type { ListenFn } from "../../../shared/listen/listen-fn.ts";
import { ListenSubscription } from "../../../shared/listen/listen-subscription.ts";
import { RUN_SLOTS_CHANNEL } from "../../../shared/runs/run-channels.ts";
import type { ClaimOutcome } from "../claim/claim-run.ts";
import { claimWaitingRun, type UnavailableTiers } from "../claim/claim-waiting-run.ts";
import type { LostClaimLookup } from "../claim/find-lost-claim.ts";
import type { RunWorkerLimits } from "../run-limits.ts";
import { runLogFields } from "../run-log-fields.ts";
import { type LentSlot, LentSlots } from "./lent-slots.ts";
import { fromOtherNode, notifySlotFreed } from "./park-run.ts";

export interface FairRunSlotsDeps {
  readonly db: Db;
  readonly nodeId: string;
  readonly logger: Logger;
  readonly limits: Pick<
    RunWorkerLimits,
    | "concurrency"
    | "leaseTtlMs"
    | "waitingPollMs"
    | "defaultMaxConcurrentRuns"
    | "affinityWaitMs"
    | "nodeTtlMs"
  >;
  /** Executes one claimed root run; resolves when it has ended (whatever the outcome). */
  /**
   * Runs a claimed run to its end; true when its ending already NOTIFYed the slots
   * channel (in the terminal transaction), so no separate NOTIFY is needed.
   */
  readonly execute: (claim: ClaimOutcome & { readonly ok: true }) => Promise<boolean>;
  /** False: claim nothing now (the node's sandbox tier is gone); the poll looks again. */
  readonly canClaim?: () => boolean;
  /** Tiers whose runs are not claimed now (decision 0114); asked before each claim. */
  readonly unavailableTiers?: () => UnavailableTiers;
  /** LISTEN on the slots channel; without it only the poll finds work freed elsewhere. */
  readonly listen?: ListenFn;
  /** A claim whose answer was lost is looked up and taken up (decision 0150). */
  readonly lostClaim?: LostClaimLookup;
}

/** Claims in a row that may lose their races before the fill gives up until the next wake. */
const MAX_CONTENDED_ROUNDS = 4;

/**
 * Slots beyond `concurrency` that only a uid with no root run running (on any node) may
 * take (issue 37 item 8, decision 0104): with the default
 * max_concurrent_runs equal to WORKER_CONCURRENCY, one user fills every slot of a node and
 * a newcomer waited for one of their runs to end (23–40 s). With this slot a newcomer's run
 * starts at the next fill (a NOTIFY, at worst `waitingPollMs`), while one user alone still
 * gets all `concurrency` slots. A second newcomer at the same moment waits for a turnover.
 */
export const IDLE_UID_SLOTS = 1;

/**
 * This node's `concurrency` slots for root runs, filled from the runs waiting in Postgres
 * in fair order (claim-waiting-run.ts). A fill runs when a run was parked here, when one
 * of this node's runs ended, when another node NOTIFYs the slots channel (it parked a run
 * or freed a slot of a uid; this node's own notifications are skipped, it has woken
 * already) and every `waitingPollMs` while a slot is free (a lost notification, a run
 * ended by the sweeper). Fills never overlap: a wake during one makes it look once more.
 * A run's end starts no fill when the last fill claimed the only run that was waiting.
 */
export class FairRunSlots {
  readonly #deps: FairRunSlotsDeps;
  readonly #inflight = new Set<Promise<void>>();
  /** Slots of runs waiting for an Execution Lease, serving other runs meanwhile. */
  readonly #lent = new LentSlots(() => this.wake());
  #filling: Promise<void> | undefined;
  #again = false;
  /**
   * The last fill claimed the only waiting run there was, and no fill ran since: a run
   * ending now frees a slot that nothing waits for, so it starts no fill.
   */
  #nothingWaits = false;
  #stopped = false;
  #timer: ReturnType<typeof setInterval> | undefined;
  readonly #subscription: ListenSubscription;

  constructor(deps: FairRunSlotsDeps) {
    this.#deps = deps;
    this.#subscription = new ListenSubscription({
      listen: deps.listen,
      channel: RUN_SLOTS_CHANNEL,
      onPayload: (payload) => {
        if (fromOtherNode(payload, deps.nodeId)) this.wake();
      },
      logger: deps.logger,
      what: "free run slots",
      fallback: "waiting runs are found by polling instead",
    });
  }

  async start(): Promise<void> {
    const { limits } = this.#deps;
    await this.#subscription.start();
    this.#timer = setInterval(() => {
      if (this.#busy() < limits.concurrency + IDLE_UID_SLOTS) this.wake();
    }, limits.waitingPollMs);
    this.#timer.unref?.();
    this.wake();
  }

  /** Looks for a waiting run to claim now (coalesced with a fill in progress). */
  wake(): void {
    if (this.#stopped) {
      // No new claims, but the runs in flight still take their slots back as they free.
      this.#lent.serve(() => this.#busy() < this.#deps.limits.concurrency);
      return;
    }
    if (this.#filling !== undefined) {
      this.#again = true;
      return;
    }
    this.#filling = this.#fill().finally(() => {
      this.#filling = undefined;
      if (this.#again) {
        this.#again = false;
        this.wake();
      }
    });
  }

  /** Takes no more runs; those executing go on (see inflight()). */
  async stopTaking(): Promise<void> {
    this.#stopped = true;
    if (this.#timer !== undefined) clearInterval(this.#timer);
    await this.#filling;
    await this.#subscription.stop();
  }

  /**
   * Lends the slot of a root run whose command waits for an Execution Lease (decision
   * 0141); undefined when the run is not in one of these slots.
   */
  lend(rootRunId: string): LentSlot | undefined {
    return this.#lent.lend(rootRunId);
  }

  /** Runs still executing. */
  inflight(): Promise<void>[] {
    return [...this.#inflight];
  }

  async #fill(): Promise<void> {
    const { db, nodeId, limits, logger } = this.#deps;
    // Set before the first await: a wake during a fill runs another one, which looks again.
    this.#nothingWaits = false;
    let contended = 0;
    // Granted commands take their slots back first; a new claim waits behind them.
    this.#lent.serve(() => this.#busy() < limits.concurrency);
    while (!this.#stopped && this.#busy() < limits.concurrency + IDLE_UID_SLOTS) {
      if (this.#deps.canClaim?.() === false) return;
      let claim: Awaited<ReturnType<typeof claimWaitingRun>>;
      try {
        claim = await claimWaitingRun(db, {
          nodeId,
          leaseTtlMs: limits.leaseTtlMs,
          defaultMaxConcurrentRuns: limits.defaultMaxConcurrentRuns,
          // A regular slot a granted command waits for is not claimed by anyone else.
          idleUidsOnly: this.#busy() >= limits.concurrency || this.#lent.returning,
          affinityWaitMs: limits.affinityWaitMs,
          nodeTtlMs: limits.nodeTtlMs,
          ...(this.#deps.lostClaim === undefined ? {} : { lostClaim: this.#deps.lostClaim }),
          ...(this.#deps.unavailableTiers === undefined
            ? {}
            : { unavailable: this.#deps.unavailableTiers() }),
        });
      } catch (error) {
        // The poll tries again; the runs keep waiting in Postgres meanwhile.
        logger.warn({ err: error }, "claiming a waiting run failed");
        return;
      }
      if (!claim.ok) {
        if (claim.reason === "none" || ++contended >= MAX_CONTENDED_ROUNDS) return;
        continue;
      }
      contended = 0;
      this.#track(claim);
      // Nothing else was claimable when it looked; whatever becomes so wakes us.
      if (!claim.more) {
        this.#nothingWaits = claim.nothingElseWaits;
        return;
      }
    }
  }

  /** Slots in use: runs executing here, less those lent while their command waits. */
  #busy(): number {
    return this.#inflight.size - this.#lent.out;
  }

  #track(claim: ClaimOutcome & { readonly ok: true }): void {
    const { logger, db, nodeId } = this.#deps;
    this.#lent.track(claim.run.runId);
    const work = (async () => {
      let notified = false;
      try {
        notified = await this.#deps.execute(claim);
      } catch (error) {
        logger.error(
          { err: error, ...runLogFields(claim.run) },
          "run execution failed unexpectedly",
        );
      }
      // Other nodes may hold waiting runs of this uid that its limit kept back. An ending
      // told them at its commit; a hand-back, a lost lease or a throw did not.
      if (notified) return;
      await notifySlotFreed(db, nodeId).catch((error: unknown) => {
        logger.warn({ err: error }, "could not NOTIFY a freed run slot; other nodes poll");
      });
    })();
    this.#inflight.add(work);
    void work.finally(() => {
      this.#inflight.delete(work);
      this.#lent.untrack(claim.run.runId);
      // Nothing waited when the last fill looked, and a run that started waiting since
      // woke the slots (a park here, another node's NOTIFY; the poll if that was lost).
      if (!this.#nothingWaits || this.#lent.returning) this.wake();
    });
  }
}
