import { randomBytes } from "node:crypto";
import { S3Client } from "@aws-sdk/client-s3";
import { SQSClient } from "@aws-sdk/client-sqs";
import type { OpenAPIHono } from "@hono/zod-openapi";
import { exportJWK, generateKeyPair } from "jose";
import pino from "pino";
import postgres from "postgres";
import { createApp } from "../../../functions/app.ts";
import type { AppDeps } from "../../../functions/app-deps.ts";
import type { AppEnv } from "../../../functions/app-env.ts";
import { createAttachmentDeps } from "../../../functions/attachments/create-attachment-deps.ts";
import { createDevTokenVerifier } from "../../../functions/auth/dev-token-verifier.ts";
import { createCapabilityMinter } from "../../../functions/capability/create-capability-minter.ts";
import { createHttpDataPlaneClient } from "../../../functions/data-plane/http-data-plane-client.ts";
import { createSqsRunQueue } from "../../../functions/queue/sqs-run-queue.ts";
import { createPollingRunEventWaiter } from "../../../functions/run-events/run-event-waiter.ts";
import { createSkillsDeps } from "../../../functions/skills/create-skills-deps.ts";
import { createHttpSkillsDataPlane } from "../../../functions/skills/http-skills-data-plane.ts";
import {
  DEV_TOKEN_AUDIENCE,
  DEV_TOKEN_ISSUER,
  mintDevToken,
} from "../../../infra/local/dev-token.ts";
import { createDb } from "../../../shared/db/client.ts";
import { ed25519PrivateJwkVar } from "../../../shared/env/env-vars.ts";

/** Nothing listens here: a unit test that reached a dependency would fail loudly. */
const UNREACHABLE = "http://127.0.0.1:9";

export type UnitApp = {
  app: OpenAPIHono<AppEnv>;
  token(uid: string): Promise<string>;
  close(): Promise<void>;
};

/**
 * The whole app wired to dependencies that are never reached: for what the app decides
 * before any I/O (routing, auth, validation, limits, error mapping, the OpenAPI document).
 * postgres.js connects lazily, so no database is needed until a handler queries one.
 */
export async function unitApp(overrides: Partial<AppDeps> = {}): Promise<UnitApp> {
  const secret = randomBytes(32).toString("base64url");
  const sql = postgres("postgres://nobody@127.0.0.1:9/none", { max: 1, connect_timeout: 1 });
  const { privateKey } = await generateKeyPair("EdDSA", { crv: "Ed25519", extractable: true });
  const capabilities = createCapabilityMinter({
    privateJwk: ed25519PrivateJwkVar().parse(JSON.stringify(await exportJWK(privateKey))),
  });
  const sqs = new SQSClient({
    endpoint: UNREACHABLE,
    region: "us-east-1",
    credentials: { accessKeyId: "x", secretAccessKey: "x" },
    maxAttempts: 1,
  });
  const s3 = new S3Client({
    endpoint: UNREACHABLE,
    region: "us-east-1",
    credentials: { accessKeyId: "x", secretAccessKey: "x" },
    forcePathStyle: true,
    maxAttempts: 1,
  });
  const down = async () => {
    throw new Error("dependency not available in unit tests");
  };
  const deps: AppDeps = {
    logger: pino({ level: "silent" }),
    health: { db: down, queue: down, storage: down, nodesReady: down },
    db: createDb(sql),
    // The token bucket lives in Postgres, which unit tests do not reach; it has its own
    // integration test (tests/integration/functions/rate-limits.test.ts).
    rateLimiter: { take: async () => ({ ok: true }) },
    auth: createDevTokenVerifier({
      secret,
      issuer: DEV_TOKEN_ISSUER,
      audience: DEV_TOKEN_AUDIENCE,
    }),
    runQueue: createSqsRunQueue({ sqs, queueUrl: `${UNREACHABLE}/queue/runs` }),
    dataPlane: createHttpDataPlaneClient({ baseUrl: UNREACHABLE, capabilities }),
    capabilities,
    dataPlaneUrl: UNREACHABLE,
    runEvents: createPollingRunEventWaiter(),
    attachments: createAttachmentDeps({
      s3,
      bucket: "unreachable",
      dataPlaneUrl: UNREACHABLE,
      capabilities,
    }),
    ...createSkillsDeps({
      s3,
      bucket: "unreachable",
      sqs,
      queueUrl: `${UNREACHABLE}/queue/runs`,
      skillsDataPlane: createHttpSkillsDataPlane({ baseUrl: UNREACHABLE, capabilities }),
    }),
    ...overrides,
  };
  return {
    app: createApp(deps),
    token: (uid) => mintDevToken(secret, uid),
    close: () => sql.end({ timeout: 1 }),
  };
}
