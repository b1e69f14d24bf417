import postgres from "postgres";
import { afterAll, afterEach, beforeAll, describe, expect, test } from "vitest";
import { abortable } from "../../../shared/async/abortable.ts";
import { stalledConnectionWatchdog } from "../../../shared/db/stalled-connection-watchdog.ts";
import { isTransientDatabaseError } from "../../../shared/db/transient-database-error.ts";
import { type PausableProxy, startPausableProxy } from "../../support/pausable-proxy.ts";
import { freshDatabase, type TestDatabase } from "../../support/postgres.ts";

// Decision 0167: a connection whose peer goes silent (nothing answered, nothing closed: a
// half-open path) leaves postgres.js's statement on it unsettled and its pool slot taken.
// The watchdog ends a connection that waited longer than its stall bound (which exceeds
// the server's statement_timeout, so an answer is overdue then, never merely slow): the
// statement fails with a retryable connection error and the next one gets a new connection.

/** The server ends any statement after this (the connection's statement_timeout). */
const STATEMENT_TIMEOUT_MS = 1_000;
/** The watchdog's bound: past the statement_timeout, an answer is overdue. */
const STALL_MS = 2 * STATEMENT_TIMEOUT_MS;

describe("a connection whose peer went silent", () => {
  let database: TestDatabase;
  let proxy: PausableProxy;
  let client: postgres.Sql | undefined;
  beforeAll(async () => {
    database = await freshDatabase({ max: 1 });
  });
  afterEach(async () => {
    await client?.end({ timeout: 1 });
    client = undefined;
    await proxy?.close();
  });
  afterAll(async () => {
    await database?.drop();
  });

  async function connect(
    watchdog: boolean,
    onStalled?: (error: Error) => void,
  ): Promise<postgres.Sql> {
    const target = new URL(database.url);
    proxy = await startPausableProxy({ host: target.hostname, port: Number(target.port) });
    const url = new URL(database.url);
    url.port = String(proxy.port);
    client = postgres(url.toString(), {
      // One connection: a slot the silent peer keeps is the whole pool.
      max: 1,
      onnotice: () => {},
      connect_timeout: 2,
      connection: { statement_timeout: STATEMENT_TIMEOUT_MS },
      ...(watchdog
        ? {
            socket: stalledConnectionWatchdog({
              stallMs: STALL_MS,
              ...(onStalled ? { onStalled } : {}),
            }),
          }
        : {}),
    });
    await client`select 1`;
    return client;
  }

  test("the statement fails with a retryable error and the next statement is answered", async () => {
    const stalled: Error[] = [];
    const sql = await connect(true, (e) => stalled.push(e));
    proxy.strand();
    // No deadline of the test's own: only the watchdog can settle this statement.
    const error = await sql`select 2 as two`.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(Error);
    expect(isTransientDatabaseError(error)).toBe(true);
    expect(String(error)).toContain("did not answer on this connection");
    expect(stalled).toHaveLength(1);
    // Sent at once, it meets the ended connection before its close: it fails too, with a
    // connection error (the driver patch of decision 0167; unpatched it was never settled).
    const next = await sql`select 3 as three`.then(
      (rows) => rows,
      (e: unknown) => e,
    );
    if (!Array.isArray(next)) expect(isTransientDatabaseError(next)).toBe(true);
    // The pool's one slot is free again: a new connection answers.
    const [row] = await sql`select 4 as four`;
    expect(row).toEqual({ four: 4 });
  });

  test("without the watchdog the driver settles neither statement (the fault it removes)", async () => {
    const sql = await connect(false);
    proxy.strand();
    const first = sql`select 2 as two`;
    const next = sql`select 3 as three`;
    // Both are still pending long after the server's own statement_timeout would have
    // answered: a later deadline of the caller is all that ends the wait.
    const deadline = AbortSignal.timeout(3 * STALL_MS);
    const outcomes = await Promise.allSettled([
      abortable(first, deadline),
      abortable(next, deadline),
    ]);
    for (const outcome of outcomes) {
      expect(outcome.status).toBe("rejected");
      if (outcome.status === "rejected") expect(outcome.reason).toBe(deadline.reason);
    }
  });
});
