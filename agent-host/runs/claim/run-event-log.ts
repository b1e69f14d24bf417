import { sql } from "drizzle-orm";
import type { Logger } from "pino";
import type { Db, DbOrTransaction } from "../../../shared/db/client.ts";
import { type DatabaseRetry, retryDatabase } from "../../../shared/db/database-retry.ts";
import {
  executePreparedStatement,
  prepareStatement,
} from "../../../shared/db/execute-prepared-rows.ts";
import {
  PG_FOREIGN_KEY_VIOLATION,
  PG_UNIQUE_VIOLATION,
  sqlStateOf,
} from "../../../shared/db/pg-error.ts";
import { domainError } from "../../../shared/errors/domain-errors.ts";
import { RUN_EVENTS_CHANNEL } from "../../../shared/runs/run-channels.ts";
import type { RunFence } from "./run-fence.ts";

/** An event as the worker stores it: `type` + `data`; seq, run_id and created_at are added here. */
export interface StoredEvent {
  readonly type: string;
  readonly data: unknown;
}

const value = (name: string) => sql.placeholder(name);

/**
 * The hot statements of a run's event log, rendered once: every run appends several
 * events, and as named statements each connection parses and plans them once and runs
 * them in one round trip (unnamed, postgres.js sends them in two and PostgreSQL plans
 * them every time: docs/decisions/0087, 0183).
 */
const APPEND_FENCED_EVENT = prepareStatement(
  "append_fenced_event",
  sql`with fence as (
        select uid from agent_runs
        where run_id = ${value("run_id")}::uuid and attempt = ${value("attempt")}::int
          and status = 'running'
        for share
      ), ins as (
        insert into run_events (run_id, uid, seq, type, data)
        select ${value("run_id")}::uuid, fence.uid, ${value("seq")}::int, ${value("type")}::text,
               ${value("data")}::jsonb
        from fence
        returning seq
      )
      select seq, pg_notify(${value("channel")}::text, ${value("run_id")}::text) from ins`,
);
const NEXT_EVENT_SEQ = prepareStatement(
  "next_event_seq",
  sql`select coalesce(max(seq), 0) + 1 as next from run_events where run_id = ${value("run_id")}::uuid`,
);
const FENCE_HOLDS = prepareStatement(
  "run_fence_holds",
  sql`select 1 as one from agent_runs
      where run_id = ${value("run_id")}::uuid and attempt = ${value("attempt")}::int
        and status = 'running'`,
);

/**
 * Appends one event, fenced, as a single statement: the run row is read FOR SHARE with
 * the fence in its WHERE, so the insert happens only while (run_id, attempt, running)
 * holds, and a concurrent status change (the expired-lease sweep, a cancel of a pending
 * run) either waits for this insert or makes it match nothing (READ COMMITTED re-checks
 * the locked row). An event can therefore never follow the run's terminal event.
 *
 * The NOTIFY is in the same statement, so event streams wake exactly when the row is
 * committed. Returns false when the fence no longer holds.
 */
export async function appendFencedEvent(
  db: DbOrTransaction,
  fence: RunFence,
  seq: number,
  event: StoredEvent,
): Promise<boolean> {
  const rows = await executePreparedStatement<{ seq: number }>(db, APPEND_FENCED_EVENT, {
    run_id: fence.runId,
    attempt: fence.attempt,
    seq,
    type: event.type,
    data: JSON.stringify(event.data ?? {}),
    channel: RUN_EVENTS_CHANNEL,
  });
  return rows.length === 1;
}

/** The next seq of a run: 1 + the highest so far (0 events → 1). */
export async function nextEventSeq(db: DbOrTransaction, runId: string): Promise<number> {
  const [row] = await executePreparedStatement<{ next: number | string }>(db, NEXT_EVENT_SEQ, {
    run_id: runId,
  });
  return Number(row?.next ?? 1);
}

/**
 * The event stream of one claimed run, written by its worker alone: seq is counted here
 * (gap-free by the schema's prev_seq foreign key), appends are serialised in call order,
 * and every append is fenced by the claim's attempt. Once the fence fails the log is
 * `lost` and every later append rejects with `lease_lost` without touching the database.
 */
export class RunEventLog {
  readonly #db: Db;
  readonly #fence: RunFence;
  readonly #retry: { readonly policy: DatabaseRetry; readonly logger: Logger } | undefined;
  #nextSeq: number;
  #tail: Promise<unknown> = Promise.resolve();
  #lost = false;

  /**
   * With `retry`, an append the database did not answer is tried again (decision 0112):
   * a completed command's events are not lost to a restart of PostgreSQL.
   */
  constructor(deps: {
    readonly db: Db;
    readonly fence: RunFence;
    readonly nextSeq: number;
    readonly retry?: { readonly policy: DatabaseRetry; readonly logger: Logger };
  }) {
    this.#db = deps.db;
    this.#fence = deps.fence;
    this.#nextSeq = deps.nextSeq;
    this.#retry = deps.retry;
  }

  get lost(): boolean {
    return this.#lost;
  }

  /** The seq the next event gets (the terminal event is written by finishRun with it). */
  get nextSeq(): number {
    return this.#nextSeq;
  }

  /** Appends after every earlier append; rejects with `lease_lost` once the fence fails. */
  append(event: StoredEvent): Promise<void> {
    const done = this.#tail.then(() => this.#appendNow(event));
    // The chain must survive a rejection, or one failure would reject every later append
    // with the wrong error.
    this.#tail = done.catch(() => {});
    return done;
  }

  /** Waits for every append issued so far (the terminal event must come after them). */
  async settled(): Promise<void> {
    await this.#tail;
  }

  async #appendNow(event: StoredEvent): Promise<void> {
    if (this.#lost) throw leaseLost(this.#fence);
    const retry = this.#retry;
    const ok =
      retry === undefined
        ? await this.#appendOnce(event, false)
        : await retryDatabase(retry.policy, "run event append", retry.logger, (_signal, state) =>
            this.#appendOnce(event, state.failures > 0),
          );
    if (!ok) {
      this.#lost = true;
      throw leaseLost(this.#fence);
    }
    this.#nextSeq++;
  }

  /** One try; `retried`: an earlier try's answer was lost, so it may have committed. */
  async #appendOnce(event: StoredEvent, retried: boolean): Promise<boolean> {
    try {
      return await appendFencedEvent(this.#db, this.#fence, this.#nextSeq, event);
    } catch (error) {
      const code = sqlStateOf(error);
      // Our seq is taken: after a lost answer, by that earlier try itself when the run is
      // still ours (a stale worker of an older attempt cannot pass the fence).
      if (code === PG_UNIQUE_VIOLATION && retried && (await fenceHolds(this.#db, this.#fence))) {
        return true;
      }
      // Someone else wrote this seq: the run is no longer ours, stop like a lost lease.
      if (code === PG_UNIQUE_VIOLATION || code === PG_FOREIGN_KEY_VIOLATION) {
        this.#lost = true;
        throw leaseLost(this.#fence, error);
      }
      throw error;
    }
  }
}

/** Whether (run_id, attempt, running) still holds. */
async function fenceHolds(db: Db, fence: RunFence): Promise<boolean> {
  const rows = await executePreparedStatement<{ one: number }>(db, FENCE_HOLDS, {
    run_id: fence.runId,
    attempt: fence.attempt,
  });
  return rows.length === 1;
}

export function leaseLost(fence: RunFence, cause?: unknown) {
  return domainError("lease_lost", {
    details: { run_id: fence.runId, attempt: fence.attempt },
    ...(cause === undefined ? {} : { cause }),
  });
}
