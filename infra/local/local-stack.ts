import { join } from "node:path";
import { S3Client } from "@aws-sdk/client-s3";
import { SQSClient } from "@aws-sdk/client-sqs";
import { PGlite } from "@electric-sql/pglite";
import type { OpenAPIHono } from "@hono/zod-openapi";
import Docker from "dockerode";
import { startFauxqs } from "fauxqs";
import type { Logger } from "pino";
import { createApp } from "../../functions/app.ts";
import type { AppEnv } from "../../functions/app-env.ts";
import { createHealthProbes } from "../../functions/health/health-probes.ts";
import type { LocalEnv } from "../../shared/env/local-env.ts";
import { createPgliteDb } from "../db/create-pglite-db.ts";
import { migrate } from "../db/migrate.ts";
import { ensureLocalAwsResources } from "./local-aws.ts";
import { type LocalSecrets, loadOrCreateLocalSecrets } from "./local-secrets.ts";

/** How long start-up waits for the Docker engine to answer before running without it. */
export const DOCKER_PING_TIMEOUT_MS = 3_000;

export type SandboxDriverStatus = { kind: "docker" | "none"; detail: string };

export type LocalStack = {
  app: OpenAPIHono<AppEnv>;
  awsEndpoint: string;
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

    const app = createApp({
      logger: p.logger,
      health: createHealthProbes({ db, sqs, runQueueUrl, s3, attachmentsBucket }),
    });

    return {
      app,
      awsEndpoint: fauxqs.address,
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
