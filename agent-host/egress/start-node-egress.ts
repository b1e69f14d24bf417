import type { Logger } from "pino";
import { abortable } from "../../shared/async/abortable.ts";
import type { Db } from "../../shared/db/client.ts";
import type { WorkcellMetrics } from "../../shared/metrics/workcell-metrics.ts";
import type { NetworkPolicy } from "../../shared/network/network-policy.ts";
import { findNetworkCeiling } from "../../shared/network/network-policy-store.ts";
import {
  type NodeSecrets,
  type NodeSecretsConfig,
  prepareNodeSecrets,
} from "../secrets/node-secrets.ts";
import { createAddressGuard } from "./address-guard.ts";
import { DEFAULT_EGRESS_LIMITS } from "./egress-limits.ts";
import { createEgressProxy, type EgressProxy } from "./egress-proxy.ts";
import { createPostgresEgressAudit } from "./postgres-egress-audit.ts";
import { createRunEgressOpener, type OpenRunEgress } from "./run-egress.ts";

/** The node's egress settings (agent-host env: WORKCELL_NETWORK_DEFAULT_ALLOW, EGRESS_OPEN_CIDRS). */
export type NodeEgressConfig = {
  readonly networkDefault: NetworkPolicy;
  /** egress_bytes_per_run where no admin set one (DEFAULT_USER_LIMITS). */
  readonly bytesPerRun: number;
  readonly openCidrs: readonly string[];
  /** The process tier's state directory; undefined on a node without it. */
  readonly processStateDir: string | undefined;
  /** The container tier's egress root; undefined on a node without it. */
  readonly containerEgressRoot: string | undefined;
  /** Secrets brokering on this node (decision 0133); undefined: no placeholder, no swap. */
  readonly secrets?: NodeSecretsConfig;
};

export type NodeEgress = {
  readonly open: OpenRunEgress;
  /** For the node's runtime report (GET /v1/admin/runtime). */
  readonly status: { ready: boolean; detail: string };
  stop(): Promise<void>;
};

/**
 * The node's proxy and the opener runs use. A proxy that cannot be made (a bad
 * EGRESS_OPEN_CIDRS) is logged and left out: runs that ask for network then fail with
 * `network_unavailable`, the others run without, and nothing is ever opened instead.
 */
export function startNodeEgress(
  deps: { db: Db; logger: Logger; metrics: WorkcellMetrics },
  config: NodeEgressConfig,
): NodeEgress {
  let proxy: EgressProxy | undefined;
  let failure = "";
  const secrets: NodeSecrets | undefined =
    config.secrets === undefined ? undefined : prepareNodeSecrets(deps.db, config.secrets);
  try {
    proxy = createEgressProxy({
      ceiling: (uid, signal) =>
        abortable(
          findNetworkCeiling(deps.db, uid, config.networkDefault),
          signal,
          "network policy read",
        ),
      guard: createAddressGuard({ openCidrs: config.openCidrs }),
      audit: createPostgresEgressAudit({
        db: deps.db,
        logger: deps.logger,
        metrics: deps.metrics,
        timeoutMs: 10_000,
      }),
      onDropped: () => deps.metrics.egressConnections.inc({ decision: "dropped" }),
      ...(secrets === undefined ? {} : { interception: secrets.interception }),
    });
  } catch (error) {
    failure = (error as Error).message;
    deps.logger.error({ err: error }, "the egress proxy could not start: no run gets network");
  }
  const open = createRunEgressOpener({
    db: deps.db,
    logger: deps.logger,
    networkDefault: config.networkDefault,
    proxy,
    processStateDir: config.processStateDir,
    containerEgressRoot: config.containerEgressRoot,
    bytesPerRun: config.bytesPerRun,
    policyTimeoutMs: DEFAULT_EGRESS_LIMITS.policyTimeoutMs,
    ...(secrets === undefined
      ? {}
      : { secrets: { source: secrets.source, caBundle: secrets.caBundle } }),
  });
  const tiers = [
    config.processStateDir === undefined ? undefined : "process",
    config.containerEgressRoot === undefined ? undefined : "container",
  ].filter((tier) => tier !== undefined);
  const status =
    proxy === undefined
      ? { ready: false, detail: `the egress proxy could not start: ${failure}` }
      : {
          ready: true,
          detail: `tiers: ${tiers.join(", ") || "none"}; default policy: ${config.networkDefault.mode === "none" ? "none" : config.networkDefault.allow.join(",")}; ${config.openCidrs.length} opened CIDRs; secrets: ${secrets === undefined ? "off (no WORKCELL_SECRETS_KEY / CA)" : "brokered"}`,
        };
  return { open, status, stop: async () => proxy?.close() };
}
