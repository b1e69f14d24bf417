import { type SQL, sql } from "drizzle-orm";
import type { Db } from "../db/client.ts";
import { executeRows } from "../db/execute-rows.ts";

export type RateDecision =
  | { readonly ok: true }
  | { readonly ok: false; readonly retryAfterSeconds: number };

export interface RequestRateLimiter {
  /** Takes one request of `uid`'s requests_per_minute. */
  take(uid: string, signal?: AbortSignal): Promise<RateDecision>;
}

export interface RequestRateLimiterOptions {
  readonly db: Db;
  /** requests_per_minute of a uid without an admin override. */
  readonly defaultRequestsPerMinute: number;
  /** How long tokens taken ahead stay usable by this instance (default 5 s). */
  readonly leaseMs?: number;
  /** Tokens one take from Postgres may hand this instance: rpm / this (default 20). */
  readonly leaseDivisor?: number;
  readonly now?: () => number;
}

/** Uids whose leases this instance remembers before it drops the expired ones. */
const MAX_LEASES = 10_000;

/**
 * The per-uid token bucket of the API (capacity = requests_per_minute, refilled at
 * rpm/60 per second), kept in Postgres so every instance of every runtime (Node, Lambda,
 * Workers: no shared memory) draws from the same bucket. To spare a round trip per
 * request, one take hands this instance up to rpm/20 tokens (at least 1), used locally
 * for at most `leaseMs`. Tokens leave the bucket when taken, so all instances together
 * never pass the limit; a lease left unused only makes the limit stricter for a few
 * seconds (docs/decisions/0037).
 */
export function createRequestRateLimiter(options: RequestRateLimiterOptions): RequestRateLimiter {
  const { db, defaultRequestsPerMinute } = options;
  const leaseMs = options.leaseMs ?? 5_000;
  const divisor = options.leaseDivisor ?? 20;
  const now = options.now ?? Date.now;
  const leases = new Map<string, { tokens: number; expiresAt: number }>();
  // One take from Postgres at a time per uid: a burst of concurrent requests that all find
  // the lease empty would otherwise each take a lease-full of tokens and drain the whole
  // bucket at once (50 concurrent requests at rpm 600 were refused).
  const inflight = new Map<string, Promise<BucketTake>>();

  const refusal = (taken: BucketTake): RateDecision => ({
    ok: false,
    retryAfterSeconds: Math.max(1, Math.ceil((1 - taken.left) / (taken.rpm / 60))),
  });

  const takeAhead = (uid: string): Promise<BucketTake> => {
    const started = takeFromBucket(db, uid, defaultRequestsPerMinute, divisor)
      .then((taken) => {
        const at = now();
        if (taken.granted < 1) {
          leases.delete(uid);
          return taken;
        }
        if (leases.size >= MAX_LEASES) {
          for (const [key, value] of leases) if (value.expiresAt <= at) leases.delete(key);
        }
        leases.set(uid, { tokens: taken.granted, expiresAt: at + leaseMs });
        return taken;
      })
      .finally(() => inflight.delete(uid));
    inflight.set(uid, started);
    return started;
  };

  return {
    async take(uid, signal) {
      // Each round either spends a leased token, or waits for one take from Postgres
      // that grants at least one token (then spends it, or another request did and the
      // next round takes again) or refuses (every waiter of it is refused).
      for (;;) {
        const lease = leases.get(uid);
        if (lease !== undefined && lease.tokens >= 1 && now() < lease.expiresAt) {
          lease.tokens -= 1;
          return { ok: true };
        }
        signal?.throwIfAborted();
        const pending = inflight.get(uid);
        if (pending !== undefined) {
          // Its failure is its starter's error; a waiter tries a take of its own.
          const taken = await pending.catch(() => undefined);
          if (taken !== undefined && taken.granted < 1) return refusal(taken);
          continue;
        }
        const taken = await takeAhead(uid);
        if (taken.granted < 1) return refusal(taken);
      }
    },
  };
}

interface BucketTake {
  readonly granted: number;
  readonly left: number;
  readonly rpm: number;
}

/**
 * One statement per take on an existing bucket: refill by the time since `refilled_at`
 * (capped at capacity), hand out min(whole tokens, lease size), keep the rest. The row
 * lock orders concurrent takes of one uid; other uids never wait. A new uid's bucket is
 * inserted full (minus its first take); racing inserts fall back to the update.
 */
async function takeFromBucket(
  db: Db,
  uid: string,
  defaultRpm: number,
  divisor: number,
): Promise<BucketTake> {
  const rpm = sql`coalesce((select requests_per_minute from user_limits where uid = ${uid}), ${defaultRpm}::int)::float8`;
  for (let round = 0; round < 2; round++) {
    const [updated] = await executeRows<BucketTake>(db, updateBucket(uid, rpm, divisor));
    if (updated !== undefined) return numbers(updated);
    const [inserted] = await executeRows<BucketTake>(
      db,
      sql`with lim as (select ${rpm} as rpm)
          insert into api_rate_buckets (uid, tokens, refilled_at, last_granted)
          select ${uid}, lim.rpm - least(floor(lim.rpm), greatest(1, floor(lim.rpm / ${divisor}::int))),
                 now(), least(floor(lim.rpm), greatest(1, floor(lim.rpm / ${divisor}::int)))
          from lim
          on conflict (uid) do nothing
          returning last_granted as granted, tokens as left, (select rpm from lim) as rpm`,
    );
    if (inserted !== undefined) return numbers(inserted);
  }
  throw new Error("rate bucket neither updated nor inserted twice in a row");
}

function updateBucket(uid: string, rpm: SQL, divisor: number): SQL {
  // Refilled tokens as of now; `greatest` keeps a take that waited on the row lock from
  // moving refilled_at backwards past a later take's.
  const avail = sql`least(lim.rpm, b.tokens + greatest(0, extract(epoch from (now() - b.refilled_at))) * lim.rpm / 60)`;
  const grant = sql`least(floor(${avail}), greatest(1, floor(lim.rpm / ${divisor}::int)))`;
  return sql`with lim as (select ${rpm} as rpm)
    update api_rate_buckets b
    set tokens = ${avail} - ${grant},
        last_granted = ${grant},
        refilled_at = greatest(b.refilled_at, now())
    from lim
    where b.uid = ${uid}
    returning b.last_granted as granted, b.tokens as left, lim.rpm as rpm`;
}

function numbers(row: BucketTake): BucketTake {
  return { granted: Number(row.granted), left: Number(row.left), rpm: Number(row.rpm) };
}
