import { randomBytes } from "node:crypto";
import {
  DeleteMessageBatchCommand,
  ReceiveMessageCommand,
  type SQSClient,
} from "@aws-sdk/client-sqs";
import type { OpenAPIHono } from "@hono/zod-openapi";
import { exportJWK, generateKeyPair } from "jose";
import pino from "pino";
import { createApp } from "../../../../functions/app.ts";
import type { AppDeps } from "../../../../functions/app-deps.ts";
import type { AppEnv } from "../../../../functions/app-env.ts";
import type { AppLimits } from "../../../../functions/app-limits.ts";
import { createAttachmentDeps } from "../../../../functions/attachments/create-attachment-deps.ts";
import { createDevTokenVerifier } from "../../../../functions/auth/dev-token-verifier.ts";
import type { TokenVerifier } from "../../../../functions/auth/token-verifier.ts";
import { createCapabilityMinter } from "../../../../functions/capability/create-capability-minter.ts";
import { createHttpDataPlaneClient } from "../../../../functions/data-plane/http-data-plane-client.ts";
import { createHealthProbes } from "../../../../functions/health/health-probes.ts";
import type { RunQueue } from "../../../../functions/queue/run-queue.ts";
import { createSqsRunQueue } from "../../../../functions/queue/sqs-run-queue.ts";
import { createNotifyRunEventWaiter } from "../../../../functions/run-events/notify-run-event-waiter.ts";
import {
  createPollingRunEventWaiter,
  type RunEventWaiter,
} from "../../../../functions/run-events/run-event-waiter.ts";
import { createSkillsDeps } from "../../../../functions/skills/create-skills-deps.ts";
import { createHttpSkillsDataPlane } from "../../../../functions/skills/http-skills-data-plane.ts";
import { postgresListen } from "../../../../functions/wiring/postgres-listen.ts";
import {
  DEV_TOKEN_AUDIENCE,
  DEV_TOKEN_ISSUER,
  mintDevToken,
} from "../../../../infra/local/dev-token.ts";
import { parseQueueMessage } from "../../../../shared/contracts/queue-message.ts";
import { createDb, type PostgresDb } from "../../../../shared/db/client.ts";
import { ed25519PrivateJwkVar } from "../../../../shared/env/env-vars.ts";
import { freshBucket, freshQueue, s3Client, sqsClient } from "../../../support/aws.ts";
import { freshDataRoot } from "../../../support/data-root.ts";
import { freshDatabase, type TestDatabase } from "../../../support/postgres.ts";
import { startTestDataPlane, type TestDataPlane } from "./data-plane-server.ts";

export const ALICE = "alice";
export const BOB = "bob";

export type CallOptions = {
  uid?: string | null;
  body?: unknown;
  headers?: Record<string, string>;
};

export type FunctionsHarness = {
  app: OpenAPIHono<AppEnv>;
  deps: AppDeps;
  database: TestDatabase;
  db: PostgresDb;
  sqs: SQSClient;
  queueUrl: string;
  dataRoot: string;
  dataPlane: TestDataPlane;
  token(uid: string): Promise<string>;
  /** One request through `app.request` (the whole app, in-process), as `uid` (null: no token). */
  call(method: string, path: string, options?: CallOptions): Promise<Response>;
  /** Receives (and deletes) every message now on the run queue; the dispatched run ids. */
  drainDispatches(): Promise<string[]>;
  close(): Promise<void>;
};

export type HarnessOptions = {
  limits?: Partial<AppLimits>;
  runEvents?: "notify" | "poll";
  /** Replace the SQS run queue (e.g. one on a fauxqs the test can stop). */
  runQueue?: (real: RunQueue) => RunQueue;
  queueUrl?: string;
  sqs?: SQSClient;
  dbMax?: number;
  /** Replace the dev-token verifier (e.g. an OIDC one against a test JWKS). */
  auth?: TokenVerifier;
};

/** The functions app on a fresh database, a fresh queue and the real data plane over a fresh data root. */
export async function startFunctionsHarness(
  options: HarnessOptions = {},
): Promise<FunctionsHarness> {
  const database = await freshDatabase({ max: options.dbMax ?? 10 });
  const db = createDb(database.sql);
  const sqs = options.sqs ?? sqsClient();
  const queueUrl = options.queueUrl ?? (await freshQueue(sqs, "runs"));
  const s3 = s3Client();
  const bucket = await freshBucket(s3);
  const { privateKey, publicKey } = await generateKeyPair("EdDSA", {
    crv: "Ed25519",
    extractable: true,
  });
  const privateJwk = ed25519PrivateJwkVar().parse(JSON.stringify(await exportJWK(privateKey)));
  const root = await freshDataRoot();
  const dataPlane = await startTestDataPlane({
    dataRoot: root.path,
    publicJwk: await exportJWK(publicKey),
  });
  const secret = randomBytes(32).toString("base64url");
  const logger = pino({ level: process.env.TEST_LOG_LEVEL ?? "silent" });
  const capabilities = createCapabilityMinter({ privateJwk });
  const realQueue = createSqsRunQueue({ sqs, queueUrl });
  const runEvents: RunEventWaiter & { close?: () => Promise<void> } =
    options.runEvents === "poll"
      ? createPollingRunEventWaiter()
      : createNotifyRunEventWaiter({ listen: postgresListen(database.sql), logger });
  const deps: AppDeps = {
    logger,
    health: createHealthProbes({ db, sqs, runQueueUrl: queueUrl, s3, attachmentsBucket: bucket }),
    db,
    auth:
      options.auth ??
      createDevTokenVerifier({
        secret,
        issuer: DEV_TOKEN_ISSUER,
        audience: DEV_TOKEN_AUDIENCE,
        adminClaim: "admin",
      }),
    runQueue: options.runQueue ? options.runQueue(realQueue) : realQueue,
    dataPlane: createHttpDataPlaneClient({ baseUrl: dataPlane.url, capabilities }),
    capabilities,
    dataPlaneUrl: dataPlane.url,
    runEvents,
    attachments: createAttachmentDeps({ s3, bucket, dataPlaneUrl: dataPlane.url, capabilities }),
    ...createSkillsDeps({
      s3,
      bucket,
      sqs,
      queueUrl,
      skillsDataPlane: createHttpSkillsDataPlane({ baseUrl: dataPlane.url, capabilities }),
    }),
    ...(options.limits === undefined ? {} : { limits: options.limits }),
  };
  const app = createApp(deps);
  const tokens = new Map<string, string>();
  const token = async (uid: string) => {
    let t = tokens.get(uid);
    if (t === undefined) {
      t = await mintDevToken(secret, uid);
      tokens.set(uid, t);
    }
    return t;
  };

  return {
    app,
    deps,
    database,
    db,
    sqs,
    queueUrl,
    dataRoot: root.path,
    dataPlane,
    token,
    async call(method, path, o = {}) {
      const uid = o.uid === undefined ? ALICE : o.uid;
      const headers: Record<string, string> = { ...o.headers };
      if (uid !== null) headers.authorization ??= `Bearer ${await token(uid)}`;
      if (o.body !== undefined) headers["content-type"] ??= "application/json";
      return app.request(path, {
        method,
        headers,
        ...(o.body === undefined
          ? {}
          : { body: typeof o.body === "string" ? o.body : JSON.stringify(o.body) }),
      });
    },
    async drainDispatches() {
      const ids: string[] = [];
      for (;;) {
        const out = await sqs.send(
          new ReceiveMessageCommand({
            QueueUrl: queueUrl,
            MaxNumberOfMessages: 10,
            WaitTimeSeconds: 0,
          }),
        );
        const messages = out.Messages ?? [];
        if (messages.length === 0) return ids;
        for (const m of messages) {
          const parsed = parseQueueMessage(m.Body);
          if (!parsed.ok || parsed.value.type !== "run.dispatch")
            throw new Error(`unexpected message ${m.Body}`);
          ids.push(parsed.value.run_id);
        }
        await sqs.send(
          new DeleteMessageBatchCommand({
            QueueUrl: queueUrl,
            Entries: messages.map((m, i) => ({ Id: String(i), ReceiptHandle: m.ReceiptHandle })),
          }),
        );
      }
    },
    async close() {
      await runEvents.close?.();
      await dataPlane.close();
      await root.remove();
      await database.drop();
    },
  };
}

/** The JSON body of a response as the type the test expects (assertions check it). */
export async function jsonOf<T>(response: Response): Promise<T> {
  return (await response.json()) as T;
}

export type ErrorJson = {
  error: { code: string; message: string; details?: Record<string, unknown> };
};
