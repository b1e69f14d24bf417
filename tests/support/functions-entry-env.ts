import { exportJWK, generateKeyPair } from "jose";
import { awsConfig, freshBucket, freshQueue, sqsClient } from "./aws.ts";
import { freshDatabase, type TestDatabase } from "./postgres.ts";

export type FunctionsEntryEnv = {
  /** The entry's database (drop it in afterAll). */
  database: TestDatabase;
  /** Its run queue on fauxqs. */
  queueUrl: string;
  /** The functions env (shared/env/functions-env.ts) that configures an entry against them. */
  vars: Record<string, string>;
};

/**
 * What every functions entry (node, lambda, worker) is configured by, as in a deployment:
 * a fresh database, run queue and attachments bucket, dev tokens signed with `devJwtSecret`,
 * a fresh capability signing key and a data plane that is never called.
 */
export async function functionsEntryEnv(p: {
  devJwtSecret: string;
  /** Prefix of the fresh queue's name (which entry made it). */
  queuePrefix: string;
  logLevel: string;
}): Promise<FunctionsEntryEnv> {
  const database = await freshDatabase();
  try {
    const queueUrl = await freshQueue(sqsClient(), p.queuePrefix);
    const { privateKey } = await generateKeyPair("EdDSA", { crv: "Ed25519", extractable: true });
    const vars = {
      DATABASE_URL: database.url,
      RUN_QUEUE_URL: queueUrl,
      ATTACHMENTS_BUCKET: await freshBucket(),
      AWS_ENDPOINT_URL: awsConfig().endpoint,
      AWS_REGION: "us-east-1",
      AWS_ACCESS_KEY_ID: "test",
      AWS_SECRET_ACCESS_KEY: "test",
      AUTH_MODE: "dev",
      DEV_JWT_SECRET: p.devJwtSecret,
      CAPABILITY_PRIVATE_KEY: JSON.stringify(await exportJWK(privateKey)),
      DATA_PLANE_URL: "https://dp.example.test",
      LOG_LEVEL: p.logLevel,
    };
    return { database, queueUrl, vars };
  } catch (error) {
    await database.drop();
    throw error;
  }
}
