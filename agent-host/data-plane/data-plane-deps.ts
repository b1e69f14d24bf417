import type { Logger } from "pino";
import type { CapabilityPublicKey } from "../../shared/capability/capability-keys.ts";
import type { CorsOrigins } from "../../shared/http/cors-for-origins.ts";
import type { RequestRateLimiter } from "../../shared/limits/request-rate-limiter.ts";
import type { WorkcellMetrics } from "../../shared/metrics/workcell-metrics.ts";
import type { Tracing } from "../../shared/telemetry/tracing.ts";
import type { AttachmentImportConfig } from "../attachments/attachment-import-config.ts";
import type { Checkpoints } from "../checkpoints/checkpoints.ts";
import type { ReadinessCheck } from "../node/node-readiness.ts";
import type { WorkspaceQuotaAccounting } from "../quota/workspace-quota.ts";
import type { UserWorkspaces } from "../workspace/user-workspaces.ts";
import type { DataPlaneLimits } from "./data-plane-limits.ts";
import type { SkillsInternalHandlers } from "./routes/skills-internal-routes.ts";
import type { ThreadRevocations } from "./thread-revocations.ts";

/** Everything the data-plane app needs, passed in once by the agent-host's wiring. */
export interface DataPlaneDeps {
  /** The safe file layer; create it with the sandbox user as `owner` (1000:1000). */
  readonly userWorkspaces: UserWorkspaces;
  /**
   * CAPABILITY_PUBLIC_KEY (a JWK, or a CryptoKey from `importCapabilityPublicKey`, which
   * fails at start-up on a bad key); several during a key rotation. The agent-host never
   * holds the private key.
   */
  readonly publicKeys: readonly CapabilityPublicKey[];
  /** The `aud` capabilities must carry (default DEFAULT_CAPABILITY_AUDIENCE). */
  readonly audience?: string;
  /** The `iss` capabilities must carry (default DEFAULT_CAPABILITY_ISSUER). */
  readonly issuer?: string;
  readonly logger: Logger;
  /**
   * The revocation point of capabilities that name a thread (docs/decisions/0051):
   * `createThreadRevocations({ db })`. The agent-host always passes it; without it (tests of
   * the file routes alone) such capabilities work until they expire.
   */
  readonly revocations?: ThreadRevocations;
  /** The agent-host's series (its ops listener serves them); default: this app's own. */
  readonly metrics?: WorkcellMetrics;
  readonly limits?: Partial<DataPlaneLimits>;
  /**
   * UserWorkspace quotas, from the `quota` claim of each capability (createAccountingQuota
   * over the data root). Without it writes are bounded by their own limits only.
   */
  readonly quota?: WorkspaceQuotaAccounting;
  /**
   * Origins allowed to call `/dp/v1/*` from a browser (CORS, DATA_PLANE_CORS_ORIGINS);
   * default none. Even `"*"` would be safe: authorization is a bearer capability, never a
   * cookie, so a page cannot act with credentials it was not handed; the list keeps other
   * sites from using a leaked capability from a visitor's browser.
   */
  readonly allowedOrigins?: CorsOrigins;
  /**
   * The attachments bucket for `POST /internal/v1/attachments/import` (the confirm flow):
   * `{ objects: createS3AttachmentObjectStore({ s3, bucket: ATTACHMENTS_BUCKET }) }`.
   * Without it that endpoint answers 503; everything else works.
   */
  readonly attachments?: AttachmentImportConfig;
  /**
   * The skill handlers for `/internal/v1/skills/*` (refresh, import, personal listing), called
   * by functions/'s HTTP SkillsDataPlane with service capabilities: pass the AgentHostSkills
   * of `createAgentHostSkills`. Without it those endpoints answer 503; everything else works.
   */
  readonly skills?: SkillsInternalHandlers;
  /**
   * `/readyz` (routes/health-routes.ts): the node's readiness once it is wired, read at
   * each request (the data plane starts before the sandbox manager and worker exist).
   */
  readonly readiness?: () => ReadinessCheck | undefined;
  /**
   * The API's per-uid requests_per_minute bucket (createRequestRateLimiter over the same
   * database), taken once per `/dp/v1` request after the capability. The agent-host always
   * passes it; without it (tests of the file routes alone) the data plane is unlimited.
   * The internal routes are functions/'s own calls, already counted at the API.
   */
  readonly rateLimiter?: RequestRateLimiter;
  /**
   * Checkpoints of Workdirs for `POST /internal/v1/checkpoints` (docs/architecture.md §16).
   * Without it that endpoint answers 503; everything else works.
   */
  readonly checkpoints?: Checkpoints;
  /** A SERVER span per request, continuing the caller's `traceparent`; default off. */
  readonly tracing?: Tracing;
}
