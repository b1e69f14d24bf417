import { GetQueueAttributesCommand, type SQSClient } from "@aws-sdk/client-sqs";
import { sql } from "drizzle-orm";
import { abortable } from "../../shared/async/abortable.ts";
import type { Db } from "../../shared/db/client.ts";

/** What `/readyz` answers: each part, and whether the node can take work. */
export type ReadinessReport = {
  ready: boolean;
  components: {
    db: "ok" | "down";
    queue: "ok" | "down";
    /** The sandbox tiers usable now; empty means no run can execute here. */
    sandbox_tiers: string[];
    quiesced: boolean;
  };
};

export type ReadinessCheck = (signal: AbortSignal) => Promise<ReadinessReport>;

export type NodeReadinessDeps = {
  db: Db;
  sqs: SQSClient;
  runQueueUrl: string;
  tiers: (signal: AbortSignal) => Promise<string[]>;
  /** A tier the node started with does not answer now (TierWatch): not ready. */
  degraded?: () => boolean;
  quiesced: () => boolean;
};

/**
 * The agent-host's readiness (docs/api.md "Health"): ready only when its database and queue
 * answer, every sandbox tier it started with answers (at least one), and it is not
 * quiesced. Each probe is one
 * real round trip, bounded by the caller's signal.
 */
export function createNodeReadiness(deps: NodeReadinessDeps): ReadinessCheck {
  const probe = async (work: () => Promise<unknown>, signal: AbortSignal) => {
    try {
      await abortable(work(), signal);
      return "ok" as const;
    } catch {
      return "down" as const;
    }
  };
  return async (signal) => {
    const [db, queue, tiers] = await Promise.all([
      probe(() => deps.db.execute(sql`select 1`), signal),
      probe(
        () =>
          deps.sqs.send(
            new GetQueueAttributesCommand({
              QueueUrl: deps.runQueueUrl,
              AttributeNames: ["QueueArn"],
            }),
            { abortSignal: signal },
          ),
        signal,
      ),
      deps.tiers(signal).catch(() => [] as string[]),
    ]);
    const quiesced = deps.quiesced();
    const degraded = deps.degraded?.() ?? false;
    return {
      ready: db === "ok" && queue === "ok" && tiers.length > 0 && !degraded && !quiesced,
      components: { db, queue, sandbox_tiers: tiers, quiesced },
    };
  };
}
