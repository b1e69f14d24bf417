import { sql } from "drizzle-orm";
import type { TerminalRunStatus } from "../contracts/run.ts";
import type { DbTransaction } from "../db/client.ts";
import { type RunError, runEvents } from "../db/schema.ts";
import { RUN_EVENTS_CHANNEL } from "./run-channels.ts";

/** The part of a run's ending that its `run.completed` event carries. */
export interface TerminalEnding {
  readonly status: TerminalRunStatus;
  /** Required when `failed`. */
  readonly error?: RunError;
  /** A shell-model run: the exit code of its one command (docs/api.md, run.completed). */
  readonly exitCode?: number;
}

/** The `data` of a `run.completed` event (docs/api.md). */
export function terminalEventData(ending: TerminalEnding): Record<string, unknown> {
  return {
    status: ending.status,
    ...(ending.error ? { error: ending.error } : {}),
    ...(ending.exitCode === undefined ? {} : { exit_code: ending.exitCode }),
  };
}

/**
 * The `run.completed` event of an ending decided in `tx` (which holds the run row), with
 * its NOTIFY in the same transaction (the event-stream contract of 0004). `seq` is the
 * writer's next seq, or undefined to take max + 1 (the expired-lease sweep, which has no
 * event counter of its own; the row lock makes that safe, and `prev_seq`'s foreign key
 * would refuse a gap anyway).
 */
export async function insertTerminalEvent(
  tx: DbTransaction,
  runId: string,
  uid: string,
  seq: number | undefined,
  ending: TerminalEnding,
): Promise<void> {
  await tx.insert(runEvents).values({
    runId,
    uid,
    seq:
      seq ??
      sql`(select coalesce(max(${runEvents.seq}), 0) + 1 from ${runEvents} where ${runEvents.runId} = ${runId})`,
    type: "run.completed",
    data: terminalEventData(ending),
  });
  await tx.execute(sql`select pg_notify(${RUN_EVENTS_CHANNEL}::text, ${runId}::text)`);
}
