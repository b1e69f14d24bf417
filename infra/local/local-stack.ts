import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { S3Client } from "@aws-sdk/client-s3";
import { SQSClient } from "@aws-sdk/client-sqs";
import { PGlite } from "@electric-sql/pglite";
import type { OpenAPIHono } from "@hono/zod-openapi";
import Docker from "dockerode";
import { startFauxqs } from "fauxqs";
import type { Logger } from "pino";
import { createS3AttachmentObjectStore } from "../../agent-host/attachments/s3-attachment-object-store.ts";
import { createDataPlaneApp, startDataPlaneServer } from "../../agent-host/data-plane/index.ts";
import {
  createLibcSyscalls,
  createPathResolver,
  createUserWorkspaces,
} from "../../agent-host/workspace/index.ts";
import { createApp } from "../../functions/app.ts";
import type { AppEnv } from "../../functions/app-env.ts";
import { createAttachmentDeps } from "../../functions/attachments/create-attachment-deps.ts";
import { createDevTokenVerifier } from "../../functions/auth/dev-token-verifier.ts";
import { createCapabilityMinter } from "../../functions/capability/create-capability-minter.ts";
import { createHttpDataPlaneClient } from "../../functions/data-plane/http-data-plane-client.ts";
import { createHealthProbes } from "../../functions/health/health-probes.ts";
import { createSqsRunQueue } from "../../functions/queue/sqs-run-queue.ts";
import { createNotifyRunEventWaiter } from "../../functions/run-events/notify-run-event-waiter.ts";
import { runSweeperLoop } from "../../functions/runs/sweeper-loop.ts";
import { importCapabilityPublicKey } from "../../shared/capability/capability-keys.ts";
import { DEFAULT_DATA_PLANE_PORT } from "../../shared/env/agent-host-env.ts";
import { ed25519PrivateJwkVar, ed25519PublicJwkVar } from "../../shared/env/env-vars.ts";
import type { LocalEnv } from "../../shared/env/local-env.ts";
import { createPgliteDb } from "../db/create-pglite-db.ts";
import { migrate } from "../db/migrate.ts";
import { DEV_TOKEN_AUDIENCE, DEV_TOKEN_ISSUER } from "./dev-token.ts";
import { ensureLocalAwsResources } from "./local-aws.ts";
import { type LocalSecrets, loadOrCreateLocalSecrets } from "./local-secrets.ts";

/** How long start-up waits for the Docker engine to answer before running without it. */
export const DOCKER_PING_TIMEOUT_MS = 3_000;
/** Dev tokens minted with `--admin` carry this boolean claim. */
export const LOCAL_ADMIN_CLAIM = "admin";
/** Locally the dispatch sweeper runs in-process (the cloud runs it from a cron). */
export const LOCAL_SWEEP_INTERVAL_MS = 5_000;
/** Under DATA_DIR: the agent-host data root (users/<uid dirname>/workspace, skills/). */
export const LOCAL_DATA_ROOT_DIR = "data-root";
/** The sandbox user (agent-host/sandbox/container-spec.ts); files it must write belong to it. */
const SANDBOX_OWNER = { uid: 1000, gid: 1000 };

export type SandboxDriverStatus = { kind: "docker" | "none"; detail: string };

export type LocalStack = {
  app: OpenAPIHono<AppEnv>;
  awsEndpoint: string;
  /** The agent-host data plane (files of Workdirs, with capabilities from the API). */
  dataPlaneUrl: string;
  secrets: LocalSecrets;
  sandboxDriver: SandboxDriverStatus;
  stop(): Promise<void>;
};

/**
 * Boots the embedded infrastructure and wires the apps to it. Each part is the real
 * engine used the way the cloud uses its managed twin: PGlite speaks PostgreSQL (same
 * migrations), fauxqs speaks the SQS and S3 wire protocols to the real AWS SDK.
 */
export async function startLocalStack(p: {
  env: LocalEnv;
  dataDir: string;
  logger: Logger;
  /** Default DEFAULT_DATA_PLANE_PORT. */
  dataPlanePort?: number;
}): Promise<LocalStack> {
  const stops: Array<() => Promise<void>> = [];
  try {
    const secrets = await loadOrCreateLocalSecrets(p.dataDir);

    const pglite = await PGlite.create(join(p.dataDir, "pg"));
    stops.push(() => pglite.close());
    await migrate(pglite);
    const db = createPgliteDb(pglite);

    const fauxqs = await startFauxqs({
      port: p.env.AWS_EMULATOR_PORT,
      logger: false,
      dataDir: join(p.dataDir, "fauxqs"),
      s3StorageDir: join(p.dataDir, "s3"),
    });
    stops.push(() => fauxqs.stop());
    const aws = {
      endpoint: fauxqs.address,
      region: "us-east-1",
      credentials: { accessKeyId: "local", secretAccessKey: "local" },
    };
    const sqs = new SQSClient(aws);
    const s3 = new S3Client({ ...aws, forcePathStyle: true });
    const { runQueueUrl, attachmentsBucket } = await ensureLocalAwsResources(sqs, s3);

    const runQueue = createSqsRunQueue({ sqs, queueUrl: runQueueUrl });
    const capabilities = createCapabilityMinter({
      privateJwk: ed25519PrivateJwkVar().parse(JSON.stringify(secrets.capabilityPrivateJwk)),
    });
    const dataRoot = join(p.dataDir, LOCAL_DATA_ROOT_DIR);
    await mkdir(dataRoot, { recursive: true, mode: 0o700 });
    const sys = createLibcSyscalls();
    const dataPlane = await startDataPlaneServer({
      port: p.dataPlanePort ?? DEFAULT_DATA_PLANE_PORT,
      app: createDataPlaneApp({
        userWorkspaces: createUserWorkspaces({
          dataRoot,
          sys,
          resolver: createPathResolver(sys),
          // Only root can hand files to the sandbox user; otherwise they stay ours.
          ...(process.getuid?.() === 0 ? { owner: SANDBOX_OWNER } : {}),
        }),
        publicKeys: [
          await importCapabilityPublicKey(
            ed25519PublicJwkVar().parse(JSON.stringify(secrets.capabilityPublicJwk)),
          ),
        ],
        logger: p.logger,
        attachments: { objects: createS3AttachmentObjectStore({ s3, bucket: attachmentsBucket }) },
      }),
    });
    stops.push(() => dataPlane.close());
    const dataPlaneUrl = dataPlane.url;
    const runEvents = createNotifyRunEventWaiter({
      listen: (channel, onPayload) => pglite.listen(channel, onPayload),
      logger: p.logger,
    });
    stops.push(() => runEvents.close());
    const app = createApp({
      logger: p.logger,
      health: createHealthProbes({ db, sqs, runQueueUrl, s3, attachmentsBucket }),
      db,
      auth: createDevTokenVerifier({
        secret: secrets.devJwtSecret,
        issuer: DEV_TOKEN_ISSUER,
        audience: DEV_TOKEN_AUDIENCE,
        adminClaim: LOCAL_ADMIN_CLAIM,
      }),
      runQueue,
      dataPlane: createHttpDataPlaneClient({ baseUrl: dataPlaneUrl, capabilities }),
      capabilities,
      dataPlaneUrl,
      runEvents,
      attachments: createAttachmentDeps({
        s3,
        bucket: attachmentsBucket,
        dataPlaneUrl,
        capabilities,
      }),
    });

    const sweeping = new AbortController();
    const sweeper = runSweeperLoop(
      { db, runQueue, logger: p.logger },
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
      dataPlaneUrl,
      secrets,
      sandboxDriver: await detectSandboxDriver(),
      async stop() {
        for (const stop of stops.reverse()) await stop();
      },
    };
  } catch (error) {
    for (const stop of stops.reverse()) await stop().catch(() => {});
    throw error;
  }
}

async function detectSandboxDriver(): Promise<SandboxDriverStatus> {
  const docker = new Docker({ timeout: DOCKER_PING_TIMEOUT_MS });
  try {
    await docker.ping();
    const version = await docker.version();
    return { kind: "docker", detail: `engine ${version.Version}` };
  } catch (error) {
    return {
      kind: "none",
      detail: `the Docker engine does not answer (${(error as Error).message}); scripts/ensure-system.sh starts it`,
    };
  }
}
