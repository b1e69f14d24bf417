import type { S3Client } from "@aws-sdk/client-s3";
import type { Logger } from "pino";
import type { CapabilityPublicKey } from "../../shared/capability/capability-keys.ts";
import type { Db } from "../../shared/db/client.ts";
import type { CorsOrigins } from "../../shared/http/cors-for-origins.ts";
import { createRequestRateLimiter } from "../../shared/limits/request-rate-limiter.ts";
import { DEFAULT_USER_LIMITS } from "../../shared/limits/user-limits.ts";
import type { WorkcellMetrics } from "../../shared/metrics/workcell-metrics.ts";
import type { Tracing } from "../../shared/telemetry/tracing.ts";
import { createS3AttachmentObjectStore } from "../attachments/s3-attachment-object-store.ts";
import type { ReadinessCheck } from "../node/node-readiness.ts";
import type { NodeWorkspaces } from "../start-workspaces.ts";
import { createDataPlaneApp } from "./data-plane-app.ts";
import { startDataPlaneServer } from "./start-data-plane-server.ts";
import { createThreadRevocations } from "./thread-revocations.ts";

/**
 * The node's data plane (files, attachments, skills, checkpoints over capabilities),
 * listening. `readiness` is read per request: the node's check exists only once the node
 * has started, after the server.
 */
export function startNodeDataPlane(
  deps: {
    readonly db: Db;
    readonly s3: S3Client;
    readonly attachmentsBucket: string;
    readonly capabilityPublicKeys: readonly CapabilityPublicKey[];
    readonly dataPlane: { port: number; hostname: string; corsOrigins?: CorsOrigins };
    readonly tracing?: Tracing;
  },
  workspaces: NodeWorkspaces,
  logger: Logger,
  metrics: WorkcellMetrics,
  readiness: () => ReadinessCheck | undefined,
) {
  return startDataPlaneServer({
    port: deps.dataPlane.port,
    hostname: deps.dataPlane.hostname,
    app: createDataPlaneApp({
      userWorkspaces: workspaces.userWorkspaces,
      quota: workspaces.quota,
      publicKeys: deps.capabilityPublicKeys,
      revocations: createThreadRevocations({ db: deps.db }),
      // The API's limit and bucket: a user's file requests count as API requests do.
      rateLimiter: createRequestRateLimiter({
        db: deps.db,
        defaultRequestsPerMinute: DEFAULT_USER_LIMITS.requests_per_minute,
      }),
      logger,
      metrics,
      attachments: {
        objects: createS3AttachmentObjectStore({ s3: deps.s3, bucket: deps.attachmentsBucket }),
      },
      skills: workspaces.skills,
      checkpoints: workspaces.checkpoints.checkpoints,
      readiness,
      ...(deps.tracing === undefined ? {} : { tracing: deps.tracing }),
      ...(deps.dataPlane.corsOrigins === undefined
        ? {}
        : { allowedOrigins: deps.dataPlane.corsOrigins }),
    }),
  });
}
