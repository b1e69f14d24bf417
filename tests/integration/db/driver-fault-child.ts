// A database client process under load for driver-fault-guard.test.ts: `workers` loops of
// short transactions through the test's proxy, reporting on stdout (one JSON line each)
// when they first commit, when the connection is lost, and when they commit again after.
// Besides, each loss of service says "lost" and the first commit after it "serving-again",
// so a test can cut again and again (the unpatched driver may leave some loops hanging for
// good, so "recovered" never comes there).
// The driver is imported from `driver` (the installed, patched one or an unpatched copy) so
// the test can show the crash it prevents. stdin "stop" ends the loops and the process.
import { createInterface } from "node:readline";
import { abortable } from "../../../shared/async/abortable.ts";
import { guardDatabaseDriverFaults } from "../../../shared/db/driver-fault-guard.ts";
import { stalledConnectionWatchdog } from "../../../shared/db/stalled-connection-watchdog.ts";

export type DriverFaultChildArgs = {
  url: string;
  /** File URL of the postgres.js entry to import. */
  driver: string;
  /** Install the process guard (shared/db/driver-fault-guard.ts). */
  guard: boolean;
  workers: number;
  /**
   * Bound every transaction as our DB layer does (decision 0167): the server's
   * statement_timeout, the stalled-connection watchdog past it, and the caller's deadline
   * past that.
   */
  bounds?: { statementTimeoutMs: number; stallMs: number; deadlineMs: number };
};

const args = JSON.parse(process.argv[2] ?? "{}") as DriverFaultChildArgs;
const say = (event: string, fields: object = {}) =>
  process.stdout.write(`${JSON.stringify({ event, ...fields })}\n`);
// Observes without changing what Node does with the error (the test reads why it died).
process.on("uncaughtExceptionMonitor", (error, origin) =>
  say("uncaught", {
    message: String(error),
    origin,
    stack: error instanceof Error ? error.stack : "",
  }),
);
if (args.guard) {
  guardDatabaseDriverFaults({
    logger: { error: () => {}, fatal: () => {} },
    exit: (code) => process.exit(code),
    onContained: () => say("contained"),
  });
}

type Sql = {
  begin<T>(fn: (tx: Sql) => Promise<T>): Promise<T>;
  (strings: TemplateStringsArray, ...values: unknown[]): Promise<unknown[]>;
  end(options: { timeout: number }): Promise<void>;
};
const { default: postgres } = (await import(args.driver)) as {
  default: (url: string, options: object) => Sql;
};
const { bounds } = args;
const sql = postgres(args.url, {
  max: args.workers,
  onnotice: () => {},
  connect_timeout: 2,
  ...(bounds
    ? {
        connection: { statement_timeout: bounds.statementTimeoutMs },
        socket: stalledConnectionWatchdog({ stallMs: bounds.stallMs }),
      }
    : {}),
});

/** One transaction, bounded by the caller's deadline when `bounds` asks for it. */
function transaction(): Promise<unknown> {
  const work = sql.begin(async (tx) => {
    await tx`select pg_sleep(0.02)`;
    await tx`select 1`;
  });
  if (!bounds) return work;
  const bounded = abortable(work, AbortSignal.timeout(bounds.deadlineMs));
  inFlight.add(bounded);
  const done = () => inFlight.delete(bounded);
  bounded.then(done, done);
  return bounded;
}

/** The bounded transactions not settled yet ("settle": the test waits for those of a cut). */
const inFlight = new Set<Promise<unknown>>();
/** Called by the next commit ("commit": the test waits for the client to serve again). */
const onCommit: Array<() => void> = [];

let stopping = false;
let committed = 0;
let failed = 0;
let committedAfterFailure = 0;
let lostNow = false;
async function loop(): Promise<void> {
  while (!stopping) {
    try {
      await transaction();
      committed += 1;
      for (const wake of onCommit.splice(0)) wake();
      if (lostNow) {
        lostNow = false;
        say("serving-again");
      }
      if (committed === args.workers) say("committing");
      if (failed > 0 && ++committedAfterFailure === args.workers) say("recovered");
    } catch {
      if (!lostNow) {
        lostNow = true;
        say("lost");
      }
      if (++failed === 1) say("connection-lost");
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }
}
const loops = Array.from({ length: args.workers }, loop);
createInterface({ input: process.stdin }).on("line", async (line) => {
  // "settle": answers once every transaction in flight now has settled (failed or answered).
  if (line === "settle") {
    const now = [...inFlight];
    await Promise.allSettled(now);
    say("settled", { transactions: now.length });
    return;
  }
  // "commit": answers at the next commit.
  if (line === "commit") {
    onCommit.push(() => say("committed"));
    return;
  }
  if (line !== "stop") return;
  stopping = true;
  await Promise.all(loops);
  await sql.end({ timeout: 2 });
  say("stopped", { committed, failed });
  process.exit(0);
});
