import { HeadBucketCommand, type S3Client } from "@aws-sdk/client-s3";
import { GetQueueAttributesCommand, type SQSClient } from "@aws-sdk/client-sqs";
import { and, eq, not, sql } from "drizzle-orm";
import { abortable } from "../../shared/async/abortable.ts";
import type { Db } from "../../shared/db/client.ts";
import { nodes } from "../../shared/db/schema/nodes.ts";
import { DEFAULT_NODE_TTL_MS, nodeIsLost } from "../../shared/runs/node-liveness.ts";

/** One dependency check: resolves when the dependency answers, rejects otherwise. */
export type HealthProbe = (signal: AbortSignal) => Promise<void>;

export type HealthProbes = {
  db: HealthProbe;
  queue: HealthProbe;
  storage: HealthProbe;
  /** True when some agent-host can take runs: fresh heartbeat, active, a ready tier. */
  nodesReady: (signal: AbortSignal) => Promise<boolean>;
};

export type HealthProbeTargets = {
  db: Db;
  sqs: SQSClient;
  runQueueUrl: string;
  s3: S3Client;
  attachmentsBucket: string;
  /** NODE_TTL_SECONDS × 1000: a node silent this long is not ready. */
  nodeTtlMs?: number;
};

/**
 * Each probe is the cheapest real call to its dependency: one round trip that proves
 * the credentials, the network path and the named resource all exist.
 */
export function createHealthProbes(t: HealthProbeTargets): HealthProbes {
  return {
    // A drizzle query takes no signal: the probe stops waiting at the signal (the query
    // itself ends with its connection's statement_timeout), so a hung database is "down"
    // in time instead of holding the health check (issue 32 (3)).
    db: async (signal) => {
      await abortable(t.db.execute(sql`select 1`), signal, "the database");
    },
    queue: async (signal) => {
      await t.sqs.send(
        new GetQueueAttributesCommand({ QueueUrl: t.runQueueUrl, AttributeNames: ["QueueArn"] }),
        { abortSignal: signal },
      );
    },
    nodesReady: async (signal) => {
      const query = t.db
        .select({ nodeId: nodes.nodeId })
        .from(nodes)
        .where(
          and(
            not(nodeIsLost(t.nodeTtlMs ?? DEFAULT_NODE_TTL_MS)),
            eq(nodes.state, "active"),
            sql`jsonb_array_length(${nodes.sandboxTiers}) > 0`,
          ),
        )
        .limit(1);
      const [row] = await abortable(query, signal, "the database");
      return row !== undefined;
    },
    storage: async (signal) => {
      await t.s3.send(new HeadBucketCommand({ Bucket: t.attachmentsBucket }), {
        abortSignal: signal,
      });
    },
  };
}
