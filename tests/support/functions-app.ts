import { randomBytes } from "node:crypto";
import type { S3Client } from "@aws-sdk/client-s3";
import type { SQSClient } from "@aws-sdk/client-sqs";
import type { OpenAPIHono } from "@hono/zod-openapi";
import type { Logger } from "pino";
import { createApp } from "../../functions/app.ts";
import type { AppDeps } from "../../functions/app-deps.ts";
import type { AppEnv } from "../../functions/app-env.ts";
import type { AppLimits } from "../../functions/app-limits.ts";
import type { AttachmentLimits } from "../../functions/attachments/attachment-limits.ts";
import { createAttachmentDeps } from "../../functions/attachments/create-attachment-deps.ts";
import { createDevTokenVerifier } from "../../functions/auth/dev-token-verifier.ts";
import type { TokenVerifier } from "../../functions/auth/token-verifier.ts";
import type {
  CapabilityMinter,
  ServiceCapabilityMinter,
} from "../../functions/capability/capability-minter.ts";
import { createHttpDataPlaneClient } from "../../functions/data-plane/http-data-plane-client.ts";
import { createHealthProbes } from "../../functions/health/health-probes.ts";
import type { RunQueue } from "../../functions/queue/run-queue.ts";
import { createSqsRunQueue } from "../../functions/queue/sqs-run-queue.ts";
import type { EventTickets } from "../../functions/run-events/event-tickets.ts";
import type { RunEventWaiter } from "../../functions/run-events/run-event-waiter.ts";
import { createSkillsDeps } from "../../functions/skills/create-skills-deps.ts";
import { createHttpSkillsDataPlane } from "../../functions/skills/http-skills-data-plane.ts";
import { DEV_TOKEN_AUDIENCE, DEV_TOKEN_ISSUER, mintDevToken } from "../../infra/local/dev-token.ts";
import type { PostgresDb } from "../../shared/db/client.ts";
import type { CorsOrigins } from "../../shared/http/cors-for-origins.ts";
import { createEnvKeyWrapper, type KeyWrapper } from "../../shared/secrets/secret-envelope.ts";
import type { Tracing } from "../../shared/telemetry/tracing.ts";

/** The user every `call` acts as unless told otherwise. */
export const ALICE = "alice";
export const BOB = "bob";

export type CallOptions = {
  /** Default ALICE; null sends no token. */
  uid?: string | null;
  /** JSON-encoded unless already a string (sent as is). */
  body?: unknown;
  headers?: Record<string, string>;
  /** A token carrying the admin claim. */
  admin?: boolean;
};

export type TestFunctionsAppOptions = {
  db: PostgresDb;
  sqs: SQSClient;
  queueUrl: string;
  s3: S3Client;
  /** The bucket of attachments and skill uploads. */
  bucket: string;
  /** The data plane functions/ calls and hands to clients as `base_url`. */
  dataPlaneUrl: string;
  capabilities: CapabilityMinter & ServiceCapabilityMinter;
  runEvents: RunEventWaiter;
  logger: Logger;
  /** Replace the SQS run queue (e.g. one on a fauxqs the test can stop). */
  runQueue?: (real: RunQueue) => RunQueue;
  /** Replace the dev-token verifier (e.g. an OIDC one against a test JWKS). */
  auth?: TokenVerifier;
  limits?: Partial<AppLimits>;
  eventTickets?: EventTickets;
  /** WORKCELL_CORS_ORIGINS. */
  corsOrigins?: CorsOrigins;
  /** The deployment's secrets key (default: a fresh env key). */
  secretKeys?: KeyWrapper;
  attachmentLimits?: Partial<AttachmentLimits>;
  /** The app's and its run queue's tracing (default off). */
  tracing?: Tracing;
};

export type TestFunctionsApp = {
  app: OpenAPIHono<AppEnv>;
  deps: AppDeps;
  /** A dev token for `uid` (minted once per uid). */
  token(uid: string): Promise<string>;
  /** A dev token for `uid` carrying the admin claim. */
  adminToken(uid: string): Promise<string>;
  /** One request through `app.request` (the whole app, in-process), as `uid` (null: no token). */
  call(method: string, path: string, options?: CallOptions): Promise<Response>;
};

export { testLogger } from "./test-logger.ts";

/**
 * The functions app as an entry wires it (real SQS queue, S3 bucket, HTTP data plane,
 * skills and attachments), authenticated by HS256 dev tokens of a fresh secret.
 */
export function createTestFunctionsApp(options: TestFunctionsAppOptions): TestFunctionsApp {
  const { db, sqs, queueUrl, s3, bucket, dataPlaneUrl, capabilities } = options;
  const secret = randomBytes(32).toString("base64url");
  const tracing = options.tracing === undefined ? {} : { tracing: options.tracing };
  const realQueue = createSqsRunQueue({ sqs, queueUrl, ...tracing });
  const deps: AppDeps = {
    logger: options.logger,
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
    dataPlane: createHttpDataPlaneClient({ baseUrl: dataPlaneUrl, capabilities }),
    capabilities,
    dataPlaneUrl,
    runEvents: options.runEvents,
    secretKeys: options.secretKeys ?? createEnvKeyWrapper(randomBytes(32)),
    attachments: createAttachmentDeps({
      s3,
      bucket,
      dataPlaneUrl,
      capabilities,
      ...(options.attachmentLimits === undefined ? {} : { limits: options.attachmentLimits }),
    }),
    ...createSkillsDeps({
      s3,
      bucket,
      sqs,
      queueUrl,
      skillsDataPlane: createHttpSkillsDataPlane({ baseUrl: dataPlaneUrl, capabilities }),
    }),
    ...(options.limits === undefined ? {} : { limits: options.limits }),
    ...(options.eventTickets === undefined ? {} : { eventTickets: options.eventTickets }),
    ...(options.corsOrigins === undefined ? {} : { corsOrigins: options.corsOrigins }),
    ...tracing,
  };
  const app = createApp(deps);
  const tokens = new Map<string, string>();
  const token = async (uid: string, admin = false) => {
    const key = `${admin ? "admin:" : ""}${uid}`;
    let t = tokens.get(key);
    if (t === undefined) {
      t = await mintDevToken(secret, uid, { admin });
      tokens.set(key, t);
    }
    return t;
  };
  return {
    app,
    deps,
    token,
    adminToken: (uid) => mintDevToken(secret, uid, { admin: true }),
    async call(method, path, o = {}) {
      const uid = o.uid === undefined ? ALICE : o.uid;
      const headers: Record<string, string> = { ...o.headers };
      if (uid !== null) headers.authorization ??= `Bearer ${await token(uid, o.admin)}`;
      if (o.body !== undefined) headers["content-type"] ??= "application/json";
      return app.request(path, {
        method,
        headers,
        ...(o.body === undefined
          ? {}
          : { body: typeof o.body === "string" ? o.body : JSON.stringify(o.body) }),
      });
    },
  };
}
