// The agent-host daemon of one compute node (docs/architecture.md §1): parses its environment,
// connects Postgres, SQS, S3 and Docker, and starts the data plane, skills, the sandbox
// manager and the run worker (agent-host.ts). infra/agent-host/ installs it as a service.
// SIGTERM stops it cleanly: runs finish or are handed back, its sandboxes are destroyed
// and its node row is marked stopped, so nothing points at it (docs/deploy/split.md).
import { availableParallelism } from "node:os";
import { join } from "node:path";
import Docker from "dockerode";
import pino from "pino";
import postgres from "postgres";
import { createAwsClients } from "../shared/aws/create-aws-clients.ts";
import { importCapabilityPublicKey } from "../shared/capability/capability-keys.ts";
import { createDb } from "../shared/db/client.ts";
import { guardDatabaseDriverFaults } from "../shared/db/driver-fault-guard.ts";
import {
  stallBoundMs,
  stalledConnectionOptions,
} from "../shared/db/stalled-connection-watchdog.ts";
import { agentHostEnvSchema } from "../shared/env/agent-host-env.ts";
import { parseEnv } from "../shared/env/parse-env.ts";
import { DEFAULT_USER_LIMITS } from "../shared/limits/user-limits.ts";
import { postgresListen } from "../shared/listen/postgres-listen.ts";
import { loggerOptions } from "../shared/logging/safe-error-serializer.ts";
import { createProcessMetrics, serveProcessMetrics } from "../shared/metrics/process-metrics.ts";
import { defaultPolicyFromEnv } from "../shared/network/network-policy.ts";
import { onStopSignals } from "../shared/process/bounded-shutdown.ts";
import { startTracing } from "../shared/telemetry/start-tracing.ts";
import { tracingEnvSchema } from "../shared/telemetry/tracing-env.ts";
import { startAgentHost } from "./agent-host.ts";
import { nodeEgressRoot } from "./egress/container-egress-dir.ts";
import { modelConfigFromEnv } from "./runs/execute/model-client-factory.ts";
import { resolveSandboxImage } from "./runtime/sandbox-image.ts";
import { detectSandboxTiers } from "./sandbox/detect-sandbox-tiers.ts";
import { sandboxLockStatementMs } from "./sandbox/lifecycle/sandbox-store.ts";
import { nodeShareNanoCpus, sandboxConfigSchema } from "./sandbox/sandbox-config.ts";
import { nodeSecretsFromEnv } from "./secrets/secrets-material.ts";

const MIB = 1024 * 1024;
const NANO_CPUS_PER_CPU = 1_000_000_000;
/**
 * The run worker wants 2 × concurrency + 4 connections (agent-host/runs/README.md); the
 * other 4 are for the rest of the agent-host, which shares the pool: a skills refresh
 * holds its transaction (and the grant lock) for a whole copy, an import holds one for
 * its swap, and the sandbox manager's reaper and reconciler query while runs execute.
 * (postgres.js LISTENs on a dedicated connection, outside the pool.)
 */
const poolSize = (concurrency: number) => 2 * concurrency + 8;

/**
 * The whole clean stop: runs finish or are handed back, sandboxes destroyed. Beyond it the
 * process exits anyway; an orchestrator's grace period (Kubernetes, systemd) should be longer.
 */
const AGENT_HOST_SHUTDOWN_DEADLINE_MS = 120_000;

const env = parseEnv(agentHostEnvSchema, process.env);
const logger = pino(loggerOptions(env.LOG_LEVEL));
// One database connection's failure never ends the process (decision 0111).
guardDatabaseDriverFaults({ logger, exit: (code) => process.exit(code) });
// Off unless OTEL_* asks for it; then the SDK is loaded and its provider passed in below.
const tracing = await startTracing(parseEnv(tracingEnvSchema, process.env), "workcell-agent-host");
const metrics = createProcessMetrics();
const { sqs, s3 } = createAwsClients(env);

const sandboxConfig = sandboxConfigSchema.parse({
  image: await resolveSandboxImage({
    configured: env.SANDBOX_IMAGE,
    runtimeDir: env.RUNTIME_ASSETS_DIR,
  }),
  networkMode: env.SANDBOX_NETWORK,
  memoryBytes: env.SANDBOX_MEMORY_MB * MIB,
  nanoCpus:
    env.SANDBOX_CPUS === undefined
      ? nodeShareNanoCpus(availableParallelism(), env.WORKER_CONCURRENCY)
      : Math.round(env.SANDBOX_CPUS * NANO_CPUS_PER_CPU),
  pidsLimit: env.SANDBOX_PIDS_LIMIT,
  idleTimeoutMs: env.SANDBOX_IDLE_TIMEOUT_SECONDS * 1000,
  nodeTtlMs: env.NODE_TTL_SECONDS * 1000,
  keepWarmMs: env.SANDBOX_KEEP_WARM_SECONDS * 1000,
  processPoolSize: env.SANDBOX_PROCESS_POOL_SIZE,
  ...(env.SANDBOX_TMPFS_BUDGET_MB === undefined
    ? {}
    : { tmpfsBudgetBytes: env.SANDBOX_TMPFS_BUDGET_MB * MIB }),
  dockerCallTimeoutMs: env.DOCKER_CALL_TIMEOUT_SECONDS * 1000,
});

const sql = postgres(env.DATABASE_URL, {
  max: poolSize(env.WORKER_CONCURRENCY),
  onnotice: () => {},
  // No statement may hang for ever; longer waits (the sandbox lock) raise it locally.
  connection: { statement_timeout: env.DB_STATEMENT_TIMEOUT_SECONDS * 1000 },
  // A connection silent past the longest statement it may run is ended, freeing its slot
  // (decision 0167): the longest is the sandbox lock's wait, raised to twice a create.
  ...stalledConnectionOptions({
    stallMs: stallBoundMs(
      env.DB_STATEMENT_TIMEOUT_SECONDS * 1000,
      sandboxLockStatementMs(sandboxConfig.createTimeoutMs),
    ),
    onStalled: (err) => logger.warn({ err }, "ended a database connection that stopped answering"),
  }),
});

// Secrets brokering (decision 0133): on only with the key and the CA.
const nodeSecrets = await nodeSecretsFromEnv(env, logger);
const host = await startAgentHost({
  db: createDb(sql),
  listen: postgresListen(sql),
  sqs,
  runQueueUrl: env.RUN_QUEUE_URL,
  ...(env.RUN_DLQ_URL === undefined ? {} : { deadLetterQueueUrl: env.RUN_DLQ_URL }),
  s3,
  attachmentsBucket: env.ATTACHMENTS_BUCKET,
  dataRoot: env.DATA_ROOT,
  workdirSubvolumes: env.WORKDIR_SUBVOLUMES,
  nodeId: env.NODE_ID,
  capabilityPublicKeys: [await importCapabilityPublicKey(env.CAPABILITY_PUBLIC_KEY)],
  sandboxTiers: await detectSandboxTiers({
    logger,
    dataRoot: env.DATA_ROOT,
    nodeId: env.NODE_ID,
    config: sandboxConfig,
    runtimeDir: env.RUNTIME_ASSETS_DIR,
    docker: new Docker(),
    containerEgressRoot: nodeEgressRoot(env.DATA_ROOT, env.NODE_ID),
    process: {
      stateDir: join(env.SANDBOX_STATE_DIR, env.NODE_ID),
      cgroupParent: `workcell/${env.NODE_ID}`,
    },
  }),
  sandboxConfig,
  modelConfig: modelConfigFromEnv(env),
  dataPlane: {
    port: env.DATA_PLANE_PORT,
    hostname: env.DATA_PLANE_HOST,
    ...(env.DATA_PLANE_PUBLIC_URL === undefined ? {} : { publicUrl: env.DATA_PLANE_PUBLIC_URL }),
    ...(env.DATA_PLANE_CORS_ORIGINS === undefined
      ? {}
      : { corsOrigins: env.DATA_PLANE_CORS_ORIGINS }),
  },
  workerConcurrency: env.WORKER_CONCURRENCY,
  ...(env.APPROVAL_TIMEOUT_SECONDS === undefined
    ? {}
    : { approvalTimeoutSeconds: env.APPROVAL_TIMEOUT_SECONDS }),
  nodeHeartbeatIntervalMs: env.NODE_HEARTBEAT_SECONDS * 1000,
  logger,
  tracing: tracing.tracing,
  metrics,
  egress: {
    networkDefault: defaultPolicyFromEnv(env.WORKCELL_NETWORK_DEFAULT_ALLOW),
    bytesPerRun: DEFAULT_USER_LIMITS.egress_bytes_per_run,
    openCidrs: (env.EGRESS_OPEN_CIDRS ?? "")
      .split(",")
      .map((cidr) => cidr.trim())
      .filter((cidr) => cidr.length > 0),
    processStateDir: join(env.SANDBOX_STATE_DIR, env.NODE_ID),
    containerEgressRoot: nodeEgressRoot(env.DATA_ROOT, env.NODE_ID),
    ...(nodeSecrets === undefined ? {} : { secrets: nodeSecrets }),
  },
});
const metricsServer = await serveProcessMetrics(metrics, {
  port: env.METRICS_PORT,
  hostname: env.METRICS_HOST,
  logger,
});
logger.info(
  { data_plane: host.dataPlaneUrl, sandbox: host.sandboxDriver },
  "workcell agent-host started",
);

// SIGTERM / SIGINT end the process within AGENT_HOST_SHUTDOWN_DEADLINE_MS whatever it
// waits on; runs it could not hand back are recovered by the sweeper (lease expiry).
onStopSignals({
  logger,
  deadlineMs: AGENT_HOST_SHUTDOWN_DEADLINE_MS,
  // The line the install tests and operators' log queries know a clean stop by.
  stoppingMessage: "agent-host stopping",
  steps: [
    { name: "agent-host", run: () => host.stop() },
    { name: "metrics server", run: async () => metricsServer?.close() },
    { name: "database pool", run: () => sql.end({ timeout: 5 }) },
    // Spans still buffered are exported before the process goes.
    { name: "trace export", run: () => tracing.shutdown() },
  ],
});
