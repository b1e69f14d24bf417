import { createHash } from "node:crypto";
import { mkdir, readFile } from "node:fs/promises";
import { availableParallelism } from "node:os";
import { join } from "node:path";
import { S3Client } from "@aws-sdk/client-s3";
import { SQSClient } from "@aws-sdk/client-sqs";
import type { OpenAPIHono } from "@hono/zod-openapi";
import Docker from "dockerode";
import type { Logger } from "pino";
import postgres from "postgres";
import { Registry } from "prom-client";
import { startAgentHost } from "../../agent-host/agent-host.ts";
import { nodeEgressRoot } from "../../agent-host/egress/container-egress-dir.ts";
import { modelConfigFromEnv } from "../../agent-host/runs/execute/model-client-factory.ts";
import { resolveSandboxImage } from "../../agent-host/runtime/sandbox-image.ts";
import {
  detectSandboxTiers,
  type SandboxTierSet,
} from "../../agent-host/sandbox/detect-sandbox-tiers.ts";
import { nodeShareNanoCpus, sandboxConfigSchema } from "../../agent-host/sandbox/sandbox-config.ts";
import type { SandboxDriverStatus } from "../../agent-host/sandbox/sandbox-driver-status.ts";
import { RUNTIME_CA_BUNDLE } from "../../agent-host/secrets/secrets-env.ts";
import { loadOrCreateSecretsMaterial } from "../../agent-host/secrets/secrets-material.ts";
import { createApp } from "../../functions/app.ts";
import type { AppEnv } from "../../functions/app-env.ts";
import { createAttachmentDeps } from "../../functions/attachments/create-attachment-deps.ts";
import { createCachingTokenVerifier } from "../../functions/auth/caching-token-verifier.ts";
import { createDevTokenVerifier } from "../../functions/auth/dev-token-verifier.ts";
import { createCapabilityMinter } from "../../functions/capability/create-capability-minter.ts";
import { createHttpDataPlaneClient } from "../../functions/data-plane/http-data-plane-client.ts";
import { createHealthProbes } from "../../functions/health/health-probes.ts";
import {
  createBatchingRunQueue,
  DEFAULT_BATCH_LINGER_MS,
} from "../../functions/queue/batching-run-queue.ts";
import { createOffThreadSqsSender } from "../../functions/queue/off-thread-sqs-sender.ts";
import { createSqsRunQueue } from "../../functions/queue/sqs-run-queue.ts";
import { createEventTickets } from "../../functions/run-events/event-tickets.ts";
import { createNotifyRunEventWaiter } from "../../functions/run-events/notify-run-event-waiter.ts";
import { runSweeperLoop } from "../../functions/runs/sweeper-loop.ts";
import { createSkillsDeps } from "../../functions/skills/create-skills-deps.ts";
import { personalTokenKeyFrom } from "../../functions/tokens/personal-token-secret.ts";
import { importCapabilityPublicKey } from "../../shared/capability/capability-keys.ts";
import { createDb } from "../../shared/db/client.ts";
import { DEFAULT_WORKER_CONCURRENCY } from "../../shared/env/agent-host-env.ts";
import { ed25519PrivateJwkVar, ed25519PublicJwkVar } from "../../shared/env/env-vars.ts";
import { DEFAULT_DB_STATEMENT_TIMEOUT_SECONDS } from "../../shared/env/liveness-env.ts";
import type { LocalEnv } from "../../shared/env/local-env.ts";
import type { CorsOrigins } from "../../shared/http/cors-for-origins.ts";
import { DEFAULT_USER_LIMITS } from "../../shared/limits/user-limits.ts";
import { postgresListen } from "../../shared/listen/postgres-listen.ts";
import {
  createWorkcellMetrics,
  type WorkcellMetrics,
} from "../../shared/metrics/workcell-metrics.ts";
import { defaultPolicyFromEnv } from "../../shared/network/network-policy.ts";
import { createEnvKeyWrapper } from "../../shared/secrets/secret-envelope.ts";
import type { Tracing } from "../../shared/telemetry/tracing.ts";
import { migrate } from "../db/migrate.ts";
import { LOCAL_S3_PROXY_PATH } from "./console/console-config.ts";
import { DEV_TOKEN_AUDIENCE, DEV_TOKEN_ISSUER } from "./dev-token.ts";
import { ensureLocalAwsResources } from "./local-aws.ts";
import { startLocalPostgres } from "./local-postgres.ts";
import { type LocalSecrets, loadOrCreateLocalSecrets } from "./local-secrets.ts";
import {
  localAwsCredentials,
  localUploadCredentials,
  startLoopbackFauxqs,
} from "./loopback-fauxqs.ts";

/**
 * Both planes share one pool: the run worker's 2 × concurrency + 4 (agent-host/runs/
 * README.md), plus 12 for the API's requests and the sweeper (24 at the default 4 slots).
 */
const localPoolSize = (workerConcurrency: number) => 2 * workerConcurrency + 16;

/** Dev tokens minted with `--admin` carry this boolean claim. */
export const LOCAL_ADMIN_CLAIM = "admin";
/** Locally the dispatch sweeper runs in-process (the cloud runs it from a cron). */
export const LOCAL_SWEEP_INTERVAL_MS = 5_000;
/** Under DATA_DIR: the agent-host data root (users/<uid dirname>/workspace, skills/). */
export const LOCAL_DATA_ROOT_DIR = "data-root";
/**
 * The one node of a local Workcell; it labels its sandboxes. Derived from the data
 * directory because each node's reconciler removes containers of its node id that its
 * database does not know: two local Workcells (a dev instance and a test run) on one
 * Docker engine must not share an id, or each would destroy the other's sandboxes.
 */
export function localNodeId(dataDir: string): string {
  return `local-${createHash("sha256").update(dataDir).digest("hex").slice(0, 12)}`;
}

/**
 * The local data plane is another origin (port) than the local API that serves the web
 * console, so the console's own origin is always allowed there, plus WORKCELL_CORS_ORIGINS
 * (e.g. a dev server of the console).
 */
export function localDataPlaneOrigins(env: LocalEnv): CorsOrigins {
  const configured = env.WORKCELL_CORS_ORIGINS ?? [];
  if (configured === "*") return "*";
  return [`http://127.0.0.1:${env.PORT}`, `http://localhost:${env.PORT}`, ...configured];
}

export type LocalStack = {
  app: OpenAPIHono<AppEnv>;
  awsEndpoint: string;
  /** The verified browser upload path's S3 clients (console/s3-upload-proxy.ts). */
  uploadClients: { presigner: S3Client; emulator: S3Client };
  /** The agent-host data plane (files of Workdirs, with capabilities from the API). */
  dataPlaneUrl: string;
  secrets: LocalSecrets;
  sandboxDriver: SandboxDriverStatus;
  /** The egress proxy (README "Network egress"); undefined when not configured. */
  egress: { ready: boolean; detail: string } | undefined;
  /** How the node takes checkpoints (docs/architecture.md §16). */
  checkpoints: { mode: "reflink" | "copy"; detail: string };
  stop(): Promise<void>;
};

/**
 * Boots the embedded infrastructure and wires both planes to it in one process: the
 * functions app and one agent-host (data plane, skills, sandboxes, run worker). Each part
 * is the real engine used the way the cloud uses its managed twin: PostgreSQL itself
 * (the machine's server binaries, started here with its data under DATA_DIR/postgres),
 * fauxqs speaks the SQS and S3 wire protocols to the real AWS SDK, Docker runs the
 * sandboxes.
 */
export async function startLocalStack(p: {
  env: LocalEnv;
  dataDir: string;
  /** Where browsers reach the local server (http://127.0.0.1:<PORT>), for upload URLs. */
  publicUrl: string;
  logger: Logger;
  /** One registry for the whole process: both planes count into it (main.ts serves it). */
  metrics?: WorkcellMetrics;
  /** The node's ready sandbox drivers; default: detected (Docker, then the process tier). */
  sandboxTiers?: SandboxTierSet;
  /** One tracing for both planes of the process (docs/decisions/0034); default off. */
  tracing?: Tracing;
  /** The run worker's slots (benches); default DEFAULT_WORKER_CONCURRENCY, as on a node. */
  workerConcurrency?: number;
}): Promise<LocalStack> {
  const workerConcurrency = p.workerConcurrency ?? DEFAULT_WORKER_CONCURRENCY;
  const tracing = p.tracing === undefined ? {} : { tracing: p.tracing };
  const stops: Array<() => Promise<void>> = [];
  const metrics = p.metrics ?? createWorkcellMetrics(new Registry());
  try {
    const secrets = await loadOrCreateLocalSecrets(p.dataDir);

    const pg = await startLocalPostgres(p.dataDir, p.logger);
    stops.push(() => pg.stop());
    const sql = postgres({
      ...pg.connection(),
      max: localPoolSize(workerConcurrency),
      onnotice: () => {},
      connect_timeout: 10,
      // No statement may hang for ever; longer waits (the sandbox lock) raise it locally.
      connection: { statement_timeout: DEFAULT_DB_STATEMENT_TIMEOUT_SECONDS * 1000 },
    });
    stops.push(() => sql.end({ timeout: 5 }));
    await migrate(sql);
    const db = createDb(sql);
    const listen = postgresListen(sql);

    const credentials = localAwsCredentials(secrets.devJwtSecret);
    const fauxqs = await startLoopbackFauxqs(
      {
        port: p.env.AWS_EMULATOR_PORT,
        logger: false,
        dataDir: join(p.dataDir, "fauxqs"),
        s3StorageDir: join(p.dataDir, "s3"),
      },
      credentials,
    );
    stops.push(() => fauxqs.stop());
    const aws = { endpoint: fauxqs.address, region: "us-east-1", credentials };
    const sqs = new SQSClient(aws);
    const s3 = new S3Client({ ...aws, forcePathStyle: true });
    // Browsers upload through the local server's same-origin path (console/s3-upload-
    // proxy.ts): fauxqs answers CORS preflights with 404. Upload URLs are presigned with
    // credentials of their own, which the emulator refuses: the path verifies each PUT
    // against them and forwards it signed with the emulator's, which never leave here.
    const browserS3 = new S3Client({
      ...aws,
      credentials: localUploadCredentials(secrets.devJwtSecret),
      endpoint: `${p.publicUrl}${LOCAL_S3_PROXY_PATH}`,
      forcePathStyle: true,
    });
    const { runQueueUrl, deadLetterQueueUrl, attachmentsBucket } = await ensureLocalAwsResources(
      sqs,
      s3,
    );

    // The same default ceiling for both planes (README "Network egress").
    const networkDefault = defaultPolicyFromEnv(p.env.WORKCELL_NETWORK_DEFAULT_ALLOW);
    // Secrets (decisions 0131, 0133): a key and a CA made on the first start, kept in the data dir.
    const brokered = await loadOrCreateSecretsMaterial(join(p.dataDir, "secrets-broker"));
    const secretKeys = createEnvKeyWrapper(Buffer.from(brokered.keyBase64, "base64"));
    const dataRoot = join(p.dataDir, LOCAL_DATA_ROOT_DIR);
    await mkdir(dataRoot, { recursive: true, mode: 0o700 });
    const nodeId = localNodeId(p.dataDir);
    const sandboxConfig = sandboxConfigSchema.parse({
      image: await resolveSandboxImage({
        configured: p.env.SANDBOX_IMAGE,
        runtimeDir: p.env.RUNTIME_ASSETS_DIR,
      }),
      keepWarmMs: p.env.SANDBOX_KEEP_WARM_SECONDS * 1000,
      processPoolSize: p.env.SANDBOX_PROCESS_POOL_SIZE,
      nanoCpus: nodeShareNanoCpus(availableParallelism(), workerConcurrency),
      dockerCallTimeoutMs: p.env.DOCKER_CALL_TIMEOUT_SECONDS * 1000,
    });
    // Docker when it answers, else the process tier, else runs are refused (§8).
    const sandboxTiers =
      p.sandboxTiers ??
      (await detectSandboxTiers({
        logger: p.logger,
        dataRoot,
        nodeId: nodeId,
        config: sandboxConfig,
        runtimeDir: p.env.RUNTIME_ASSETS_DIR,
        docker: new Docker(),
        containerEgressRoot: nodeEgressRoot(dataRoot, nodeId),
        process: {
          stateDir: join(p.env.SANDBOX_STATE_DIR, nodeId),
          cgroupParent: `workcell/${nodeId}`,
        },
      }));
    const agentHost = await startAgentHost({
      db,
      listen,
      sqs,
      runQueueUrl,
      deadLetterQueueUrl,
      s3,
      attachmentsBucket,
      dataRoot,
      workerConcurrency,
      workdirSubvolumes: p.env.WORKDIR_SUBVOLUMES,
      nodeId,
      capabilityPublicKeys: [
        await importCapabilityPublicKey(
          ed25519PublicJwkVar().parse(JSON.stringify(secrets.capabilityPublicJwk)),
        ),
      ],
      sandboxTiers,
      sandboxConfig,
      modelConfig: modelConfigFromEnv(p.env),
      dataPlane: {
        port: p.env.DATA_PLANE_PORT,
        hostname: "127.0.0.1",
        corsOrigins: localDataPlaneOrigins(p.env),
      },
      logger: p.logger,
      ...tracing,
      metrics,
      egress: {
        networkDefault,
        bytesPerRun: DEFAULT_USER_LIMITS.egress_bytes_per_run,
        openCidrs: (p.env.EGRESS_OPEN_CIDRS ?? "")
          .split(",")
          .map((cidr) => cidr.trim())
          .filter((cidr) => cidr.length > 0),
        processStateDir: join(p.env.SANDBOX_STATE_DIR, nodeId),
        containerEgressRoot: nodeEgressRoot(dataRoot, nodeId),
        secrets: {
          keys: secretKeys,
          ca: brokered.ca,
          runtimeBundle: await readFile(
            join(p.env.RUNTIME_ASSETS_DIR, RUNTIME_CA_BUNDLE),
            "utf8",
          ).catch(() => ""),
        },
      },
    });
    stops.push(() => agentHost.stop());
    const dataPlaneUrl = agentHost.dataPlaneUrl;

    // One long-lived process, as the Node entry: concurrent submissions share
    // SendMessageBatch calls, which a thread of their own makes.
    const sqsSender = createOffThreadSqsSender({
      aws: { AWS_REGION: aws.region, AWS_ENDPOINT_URL: aws.endpoint },
      credentials,
    });
    stops.push(() => sqsSender.close());
    const runQueue = createBatchingRunQueue(
      createSqsRunQueue({
        sqs,
        queueUrl: runQueueUrl,
        metrics,
        sendBatch: sqsSender.send,
        ...tracing,
      }),
      { lingerMs: DEFAULT_BATCH_LINGER_MS },
    );
    const capabilityPrivateJwk = ed25519PrivateJwkVar().parse(
      JSON.stringify(secrets.capabilityPrivateJwk),
    );
    const capabilities = createCapabilityMinter({ privateJwk: capabilityPrivateJwk });
    const runEvents = createNotifyRunEventWaiter({ listen, logger: p.logger });
    stops.push(() => runEvents.close());
    const app = createApp({
      ...tracing,
      networkDefault,
      secretKeys,
      logger: p.logger,
      metrics,
      health: createHealthProbes({ db, sqs, runQueueUrl, s3, attachmentsBucket }),
      db,
      auth: createCachingTokenVerifier(
        createDevTokenVerifier({
          secret: secrets.devJwtSecret,
          issuer: DEV_TOKEN_ISSUER,
          audience: DEV_TOKEN_AUDIENCE,
          adminClaim: LOCAL_ADMIN_CLAIM,
        }),
      ),
      runQueue,
      dataPlane: createHttpDataPlaneClient({ baseUrl: dataPlaneUrl, capabilities }),
      capabilities,
      dataPlaneUrl,
      runEvents,
      eventTickets: createEventTickets({ privateJwk: capabilityPrivateJwk }),
      personalTokenKey: personalTokenKeyFrom(capabilityPrivateJwk),
      ...(p.env.WORKCELL_CORS_ORIGINS === undefined
        ? {}
        : { corsOrigins: p.env.WORKCELL_CORS_ORIGINS }),
      attachments: createAttachmentDeps({
        s3,
        bucket: attachmentsBucket,
        presignS3: browserS3,
        dataPlaneUrl,
        capabilities,
      }),
      // One process: the control plane calls the agent-host's skill handlers directly.
      ...createSkillsDeps({
        s3,
        presignS3: browserS3,
        bucket: attachmentsBucket,
        sqs,
        queueUrl: runQueueUrl,
        skillsDataPlane: agentHost.skills.dataPlane,
      }),
    });

    const sweeping = new AbortController();
    const sweeper = runSweeperLoop(
      { db, runQueue, logger: p.logger, metrics, ...tracing },
      sweeping.signal,
      LOCAL_SWEEP_INTERVAL_MS,
    );
    stops.push(async () => {
      sweeping.abort();
      await sweeper;
    });

    return {
      app,
      awsEndpoint: fauxqs.address,
      uploadClients: { presigner: browserS3, emulator: s3 },
      dataPlaneUrl,
      secrets,
      sandboxDriver: agentHost.sandboxDriver,
      egress: agentHost.egress,
      checkpoints: agentHost.checkpoints,
      async stop() {
        for (const stop of stops.reverse()) await stop();
      },
    };
  } catch (error) {
    for (const stop of stops.reverse()) await stop().catch(() => {});
    throw error;
  }
}
