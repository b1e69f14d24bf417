// An agent-host-like process for the cross-process lease tests: it heartbeats one run
// (the real RunLease), acquires an Execution Lease on a root, reports it on stdout, and
// releases it when told on stdin. Lines out: {"event":"acquired"|"released"|"refused"}.
import { createInterface } from "node:readline";
import { pino } from "pino";
import postgres from "postgres";
import type { RunFence } from "../../../agent-host/runs/claim/run-fence.ts";
import { RunLease } from "../../../agent-host/runs/claim/run-lease.ts";
import { ExecutionLeases } from "../../../agent-host/runs/execution-lease/execution-leases.ts";
import { LeaseWakeups } from "../../../agent-host/runs/execution-lease/lease-wakeups.ts";
import { createDb } from "../../../shared/db/client.ts";
import { postgresListen } from "../../../shared/listen/postgres-listen.ts";

export type LeaseChildArgs = {
  url: string;
  fence: RunFence;
  workdirPath: string;
  leaseTtlMs: number;
};

const args = JSON.parse(process.argv[2] as string) as LeaseChildArgs;
const logger = pino({ level: "silent" });
const sql = postgres(args.url, { max: 4, onnotice: () => {} });
const db = createDb(sql);
const say = (event: string, extra: Record<string, unknown> = {}) =>
  process.stdout.write(`${JSON.stringify({ event, ...extra })}\n`);
const runLease = new RunLease({
  db,
  fence: args.fence,
  leaseTtlMs: args.leaseTtlMs,
  heartbeatIntervalMs: Math.floor(args.leaseTtlMs / 4),
  logger,
  onCancelRequested: () => {},
  onLost: () => say("run_lease_lost"),
});
await runLease.start();
const wakeups = new LeaseWakeups({ listen: postgresListen(sql), logger });
await wakeups.start();
const leases = new ExecutionLeases({
  db,
  nodeId: "child",
  wakeups,
  pollIntervalMs: 100,
  statementTimeoutMs: 5_000,
  logger,
});
const result = await leases.acquire(args.fence, args.workdirPath, new AbortController().signal);
if (!result.ok) {
  say("refused", { reason: result.reason });
} else {
  say("acquired", { seq: result.lease.seq });
  const lines = createInterface({ input: process.stdin });
  for await (const line of lines) {
    if (line.trim() === "release") break;
  }
  await leases.release(result.lease);
  say("released");
}
await wakeups.stop();
await runLease.stop();
await sql.end({ timeout: 2 });
