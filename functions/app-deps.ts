import type { CryptoKey } from "jose";
import type { Logger } from "pino";
import type { Db } from "../shared/db/client.ts";
import type { CorsOrigins } from "../shared/http/cors-for-origins.ts";
import type { RequestRateLimiter } from "../shared/limits/request-rate-limiter.ts";
import type { UserLimits } from "../shared/limits/user-limits.ts";
import type { WorkcellMetrics } from "../shared/metrics/workcell-metrics.ts";
import type { NetworkPolicy } from "../shared/network/network-policy.ts";
import type { KeyWrapper } from "../shared/secrets/secret-envelope.ts";
import type { Tracing } from "../shared/telemetry/tracing.ts";
import type { AppLimits } from "./app-limits.ts";
import type { AttachmentDeps } from "./attachments/attachment-deps.ts";
import type { TokenVerifier } from "./auth/token-verifier.ts";
import type { CapabilityMinter } from "./capability/capability-minter.ts";
import type { DataPlaneClient } from "./data-plane/data-plane-client.ts";
import type { DataPlaneRouting } from "./data-plane/pick-data-plane-url.ts";
import type { HealthProbes } from "./health/health-probes.ts";
import type { RunQueue } from "./queue/run-queue.ts";
import type { EventTickets } from "./run-events/event-tickets.ts";
import type { RunEventWaiter } from "./run-events/run-event-waiter.ts";
import type { RunChangesSource } from "./runs/run-changes.ts";
import type { SkillsDeps } from "./skills/create-skills-deps.ts";

/**
 * Everything the stateless app needs, passed in once by an entry (node, lambda, worker,
 * or the local one-process Workcell). No route reaches for a global or for env vars.
 */
export type AppDeps = SkillsDeps & {
  logger: Logger;
  /**
   * The process's (or invocation's) series, in the Registry its ops listener serves or its
   * entry exports (docs/decisions/0031); default: a registry of this app alone.
   */
  metrics?: WorkcellMetrics;
  /**
   * Called when each request has been answered, in runtimes nobody can scrape (Lambda,
   * Workers): createMetricsLogFlusher writes `metrics` as a log line (decision 0031).
   */
  exportMetrics?: () => Promise<void>;
  /**
   * Called when each request's span has ended, in runtimes frozen between requests (Lambda):
   * exports the buffered spans (StartedTracing.flush), or they would wait for a thaw.
   */
  flushTraces?: () => Promise<void>;
  health: HealthProbes;
  /** postgres.js, in the cloud and locally. */
  db: Db;
  /** OIDC (JWKS) in production, HS256 dev tokens locally. */
  auth: TokenVerifier;
  /**
   * The HMAC key of stored personal access tokens; entries pass
   * `personalTokenKeyFrom(CAPABILITY_PRIVATE_KEY)` so every instance checks every
   * instance's tokens. Default: a key of this app only (tests, one process).
   */
  personalTokenKey?: Promise<CryptoKey>;
  runQueue: RunQueue;
  dataPlane: DataPlaneClient;
  /** Signs the data-plane capabilities of POST /v1/threads/{id}/files/access. */
  capabilities: CapabilityMinter;
  /** NODE_TTL_SECONDS × 1000: nodes silent longer are `lost` (admin nodes); default 30 s. */
  nodeTtlMs?: number;
  /** DATA_PLANE_URL, returned to clients as `base_url` (without routing, or when no node is live). */
  dataPlaneUrl: string;
  /**
   * DATA_PLANE_ROUTING=nodes: `base_url` names a live node's own data plane, the thread's
   * sandbox node first (pick-data-plane-url.ts). Undefined: always DATA_PLANE_URL.
   */
  dataPlaneRouting?: DataPlaneRouting;
  /** LISTEN/NOTIFY where the runtime keeps a connection, bounded polling elsewhere. */
  runEvents: RunEventWaiter;
  /** Presigned uploads to the attachments bucket and imports through the data plane. */
  attachments: AttachmentDeps;
  /**
   * Signs and checks the tickets of `POST /v1/runs/{id}/events/ticket`; entries pass
   * `createEventTickets({ privateJwk: CAPABILITY_PRIVATE_KEY })` so every instance accepts
   * every instance's tickets. Default: a key of this app only (tests, one process).
   */
  eventTickets?: EventTickets;
  /**
   * Browser origins answered with CORS headers (WORKCELL_CORS_ORIGINS); default none.
   */
  corsOrigins?: CorsOrigins;
  /** Defaults to `recordedRunChanges(db)` (the run worker's `run_changes` table). */
  runChanges?: RunChangesSource;
  limits?: Partial<AppLimits>;
  /**
   * Spans of each request (and, through `runQueue`, of each run's queue hop); the entry
   * builds it from OTEL_* (shared/telemetry/start-tracing.ts). Default: off.
   */
  tracing?: Tracing;
  /**
   * requests_per_minute per uid; default: the Postgres token bucket
   * (createRequestRateLimiter) with the deployment's default limit.
   */
  rateLimiter?: RequestRateLimiter;
  /** The deployment's per-uid limits where no admin override applies (DEFAULT_USER_LIMITS). */
  userLimitDefaults?: UserLimits;
  /**
   * The network ceiling of a user no admin gave one (WORKCELL_NETWORK_DEFAULT_ALLOW,
   * defaultPolicyFromEnv); default `none`: no sandbox has a network unless configured.
   */
  networkDefault?: NetworkPolicy;
  /** Seals secrets (WORKCELL_SECRETS_KEY, decision 0131); without it PUT /v1/secrets is 503. */
  secretKeys?: KeyWrapper;
};
