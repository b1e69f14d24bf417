import { sql } from "drizzle-orm";
import type { Logger } from "pino";
import { abortable } from "../../shared/async/abortable.ts";
import type { Db } from "../../shared/db/client.ts";
import { networkRequests } from "../../shared/db/schema.ts";
import type { WorkcellMetrics } from "../../shared/metrics/workcell-metrics.ts";
import { MAX_NETWORK_REQUESTS_PER_RUN } from "../../shared/network/network-request-bounds.ts";
import type { EgressAudit, EgressRecord } from "./egress-record.ts";

export type PostgresEgressAuditDeps = {
  readonly db: Db;
  readonly logger: Logger;
  readonly metrics: Pick<WorkcellMetrics, "egressConnections" | "egressBytes">;
  /** Bound of one insert (the connection's statement_timeout bounds it in Postgres too). */
  readonly timeoutMs: number;
};

/**
 * Audit of the node's proxy: every connection counted in metrics, and kept as a
 * `network_requests` row while its run has fewer than MAX_NETWORK_REQUESTS_PER_RUN (one
 * statement checks and inserts, so concurrent connections cannot overshoot by much). A
 * failed insert is logged (host and reason, never a byte of traffic) and never reaches the
 * connection: the audit is best-effort once the decision is made, the decision is not.
 */
export function createPostgresEgressAudit(deps: PostgresEgressAuditDeps): EgressAudit {
  const write = async (r: EgressRecord) => {
    const row = {
      run_id: r.sandbox.runId,
      uid: r.sandbox.uid,
      host: r.host.slice(0, 255),
      port: r.port,
      address: r.address,
      protocol: r.protocol,
      decision: r.decision,
      reason: r.reason,
      bytes_up: r.bytesUp,
      bytes_down: r.bytesDown,
      duration_ms: Math.min(r.durationMs, 2 ** 31 - 1),
      started_at: r.startedAt.toISOString(),
    };
    await abortable(
      deps.db.execute(sql`
        insert into ${networkRequests} (run_id, uid, host, port, address, protocol, decision,
          reason, bytes_up, bytes_down, duration_ms, started_at)
        select ${row.run_id}::uuid, ${row.uid}, ${row.host}, ${row.port}, ${row.address},
          ${row.protocol}, ${row.decision}, ${row.reason}, ${row.bytes_up}, ${row.bytes_down},
          ${row.duration_ms}, ${row.started_at}::timestamptz
        where (select count(*) from ${networkRequests} where run_id = ${row.run_id}::uuid)
          < ${MAX_NETWORK_REQUESTS_PER_RUN}`),
      AbortSignal.timeout(deps.timeoutMs),
      "network audit insert",
    );
  };
  return (record) => {
    deps.metrics.egressConnections.inc({ decision: record.decision });
    deps.metrics.egressBytes.inc({ direction: "up" }, record.bytesUp);
    deps.metrics.egressBytes.inc({ direction: "down" }, record.bytesDown);
    write(record).catch((error: unknown) =>
      deps.logger.warn(
        { err: error, run_id: record.sandbox.runId, host: record.host, decision: record.decision },
        "could not record a network request (the connection was decided and is unaffected)",
      ),
    );
  };
}
