import { sql } from "drizzle-orm";
import { abortable } from "../../shared/async/abortable.ts";
import type { Db } from "../../shared/db/client.ts";
import { executeRows } from "../../shared/db/execute-rows.ts";

/** The agent-host's default run lease (agent-host/runs/run-limits.ts `leaseTtlMs`). */
export const DEFAULT_SWEEP_LEASE_TTL_MS = 30_000;

/** A probe that has not answered in this long counts as the database being away. */
const PROBE_TIMEOUT_MS = 5_000;

/**
 * What one long-lived sweeper has seen of the database (decision 0149): whether a sweep
 * could not reach it, and, in the database's clock, when a sweep first reached it again.
 * Held by the sweeper loop across its sweeps (sweeper-loop.ts); a sweeper without one
 * (the stateless cron entries) knows nothing of past outages and judges as before.
 */
export interface DatabaseUptime {
  /** A sweep's probe did not answer: the database is away for this sweeper. */
  readonly markUnreachable: () => void;
  /**
   * A probe answered at `now` (database clock): returns when the database's current
   * up-period began as this sweeper saw it, or undefined when it never saw it away.
   */
  readonly reached: (now: Date) => Date | undefined;
}

export function databaseUptime(): DatabaseUptime {
  let away = false;
  let upSince: Date | undefined;
  return {
    markUnreachable: () => {
      away = true;
    },
    reached: (now) => {
      if (away) upSince = now;
      away = false;
      return upSince;
    },
  };
}

/**
 * How long the database has been reachable for this sweep; Infinity when no outage was
 * seen. A probe that fails or does not answer within PROBE_TIMEOUT_MS (or `signal`)
 * rejects and marks the database away: the sweep stops there.
 */
export async function probeDatabaseUptime(
  db: Db,
  uptime: DatabaseUptime | undefined,
  signal: AbortSignal,
): Promise<number> {
  if (uptime === undefined) return Number.POSITIVE_INFINITY;
  let now: Date;
  try {
    const [row] = await abortable(
      executeRows<{ now: Date | string }>(db, sql`select now() as now`),
      AbortSignal.any([signal, AbortSignal.timeout(PROBE_TIMEOUT_MS)]),
      "the sweeper's database probe",
    );
    now = new Date(row?.now ?? Number.NaN);
  } catch (error) {
    uptime.markUnreachable();
    throw error;
  }
  const since = uptime.reached(now);
  return since === undefined ? Number.POSITIVE_INFINITY : now.getTime() - since.getTime();
}

/**
 * How long the database server has been up (`now() - pg_postmaster_start_time()`, its own
 * clock), for sweepers that keep no memory between sweeps (decision 0168): a node's or a
 * lease's silence counts only from the later of its last beat and the server's start, so a
 * restart does not make every live node look dead. Bounded like the probe above.
 */
export async function databaseServerUpForMs(db: Db, signal: AbortSignal): Promise<number> {
  const [row] = await abortable(
    executeRows<{ up_ms: number | string }>(
      db,
      sql`select (extract(epoch from now() - pg_postmaster_start_time()) * 1000)::float8 as up_ms`,
    ),
    AbortSignal.any([signal, AbortSignal.timeout(PROBE_TIMEOUT_MS)]),
    "the sweeper's database start probe",
  );
  return Number(row?.up_ms ?? Number.NaN);
}
