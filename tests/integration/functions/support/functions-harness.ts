import type { S3Client } from "@aws-sdk/client-s3";
import {
  DeleteMessageBatchCommand,
  ReceiveMessageCommand,
  type SQSClient,
} from "@aws-sdk/client-sqs";
import type { OpenAPIHono } from "@hono/zod-openapi";
import { exportJWK, generateKeyPair } from "jose";
import pino, { type Logger } from "pino";
import { createThreadRevocations } from "../../../../agent-host/data-plane/index.ts";
import {
  type AgentHostSkills,
  createAgentHostSkills,
} from "../../../../agent-host/skills/agent-host-skills.ts";
import {
  createLibcSyscalls,
  createPathResolver,
  createUserWorkspaces,
} from "../../../../agent-host/workspace/index.ts";
import type { AppDeps } from "../../../../functions/app-deps.ts";
import type { AppEnv } from "../../../../functions/app-env.ts";
import type { AppLimits } from "../../../../functions/app-limits.ts";
import type { TokenVerifier } from "../../../../functions/auth/token-verifier.ts";
import { createCapabilityMinter } from "../../../../functions/capability/create-capability-minter.ts";
import type { RunQueue } from "../../../../functions/queue/run-queue.ts";
import { createEventTickets } from "../../../../functions/run-events/event-tickets.ts";
import { createNotifyRunEventWaiter } from "../../../../functions/run-events/notify-run-event-waiter.ts";
import {
  createPollingRunEventWaiter,
  type RunEventWaiter,
} from "../../../../functions/run-events/run-event-waiter.ts";
import { parseQueueMessage } from "../../../../shared/contracts/queue-message.ts";
import { createDb, type PostgresDb } from "../../../../shared/db/client.ts";
import { ed25519PrivateJwkVar } from "../../../../shared/env/env-vars.ts";
import type { ListenFn } from "../../../../shared/listen/listen-fn.ts";
import { postgresListen } from "../../../../shared/listen/postgres-listen.ts";
import type { KeyWrapper } from "../../../../shared/secrets/secret-envelope.ts";
import type { Tracing } from "../../../../shared/telemetry/tracing.ts";
import { freshBucket, freshQueue, s3Client, sqsClient } from "../../../support/aws.ts";
import { freshDataRoot } from "../../../support/data-root.ts";
import {
  type CallOptions,
  createTestFunctionsApp,
  testLogger,
} from "../../../support/functions-app.ts";
import { freshDatabase, type TestDatabase } from "../../../support/postgres.ts";
import { startTestDataPlane, type TestDataPlane } from "./data-plane-server.ts";

export { ALICE, BOB, type CallOptions } from "../../../support/functions-app.ts";

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
  adminToken(uid: string): Promise<string>;
  /** One request through `app.request` (the whole app, in-process), as `uid` (null: no token). */
  call(method: string, path: string, options?: CallOptions): Promise<Response>;
  /**
   * Resolves when an event stream of `runId` next waits for new events (everything so far
   * was sent; with notify, LISTEN is up): what is written from then on arrives live.
   * Call it before opening the stream.
   */
  streamWaiting(runId: string): Promise<void>;
  /** Receives (and deletes) every message now on the run queue; the dispatched run ids. */
  drainDispatches(): Promise<string[]>;
  close(): Promise<void>;
};

export type HarnessOptions = {
  limits?: Partial<AppLimits>;
  runEvents?: "notify" | "poll";
  /** Wrap the event streams' LISTEN (e.g. one that loses notifications). */
  listen?: (real: ListenFn) => ListenFn;
  /** Replace the SQS run queue (e.g. one on a fauxqs the test can stop). */
  runQueue?: (real: RunQueue) => RunQueue;
  queueUrl?: string;
  sqs?: SQSClient;
  dbMax?: number;
  /** Replace the dev-token verifier (e.g. an OIDC one against a test JWKS). */
  auth?: TokenVerifier;
  /** The clock of event tickets (signed with the capability key, as the entries do). */
  ticketClock?: () => Date;
  /** The app's logger (default: silent unless TEST_LOG_LEVEL). */
  logger?: Logger;
  /** The clock of the data plane's capability revocation cache (default Date.now). */
  revocationClock?: () => number;
  /** The app's and its run queue's tracing (default off). */
  tracing?: Tracing;
  /**
   * The data plane's logger (default silent) and tracing (default off); `skills` serves the
   * skills routes with the real agent-host handlers on the harness's database, data root
   * and bucket (builtin skills registered).
   */
  dataPlane?: { logger?: Logger; tracing?: Tracing; skills?: boolean };
  /** The deployment's secrets key (default: a fresh env key). */
  secretKeys?: KeyWrapper;
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
  const { skills: withSkills, ...dataPlaneOptions } = options.dataPlane ?? {};
  const dataPlane = await startTestDataPlane({
    dataRoot: root.path,
    publicJwk: await exportJWK(publicKey),
    ...dataPlaneOptions,
    ...(withSkills ? { skills: await agentHostSkills(db, root.path, s3, bucket) } : {}),
    revocations: createThreadRevocations({
      db,
      ...(options.revocationClock === undefined ? {} : { now: options.revocationClock }),
    }),
  });
  const logger = options.logger ?? testLogger();
  const waitingFor = new Map<string, (() => void)[]>();
  const onWaiting = (runId: string) => {
    for (const resolve of waitingFor.get(runId) ?? []) resolve();
    waitingFor.delete(runId);
  };
  const runEvents: RunEventWaiter & { close?: () => Promise<void> } =
    options.runEvents === "poll"
      ? withWaitingHook(createPollingRunEventWaiter(), onWaiting)
      : createNotifyRunEventWaiter({
          listen: (options.listen ?? ((real) => real))(postgresListen(database.sql)),
          logger,
          hooks: { onWaiting },
        });
  const { app, deps, token, adminToken, call } = createTestFunctionsApp({
    db,
    sqs,
    queueUrl,
    s3,
    bucket,
    dataPlaneUrl: dataPlane.url,
    capabilities: createCapabilityMinter({ privateJwk }),
    runEvents,
    eventTickets: createEventTickets({
      privateJwk,
      ...(options.ticketClock === undefined ? {} : { now: options.ticketClock }),
    }),
    logger,
    ...(options.runQueue === undefined ? {} : { runQueue: options.runQueue }),
    ...(options.auth === undefined ? {} : { auth: options.auth }),
    ...(options.limits === undefined ? {} : { limits: options.limits }),
    ...(options.tracing === undefined ? {} : { tracing: options.tracing }),
    ...(options.secretKeys === undefined ? {} : { secretKeys: options.secretKeys }),
  });

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
    adminToken,
    call,
    streamWaiting(runId) {
      return new Promise((resolve) => {
        waitingFor.set(runId, [...(waitingFor.get(runId) ?? []), resolve]);
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

/** The agent-host's skills over the harness's database, data root and bucket. */
async function agentHostSkills(
  db: PostgresDb,
  dataRoot: string,
  s3: S3Client,
  bucket: string,
): Promise<AgentHostSkills> {
  const sys = createLibcSyscalls();
  const skills = createAgentHostSkills({
    db,
    sys,
    dataRoot,
    logger: pino({ level: "silent" }),
    s3,
    uploadsBucket: bucket,
    workspaces: createUserWorkspaces({ dataRoot, sys, resolver: createPathResolver(sys) }),
  });
  await skills.registerBuiltins(AbortSignal.timeout(30_000));
  return skills;
}

/** The JSON body of a response as the type the test expects (assertions check it). */
export async function jsonOf<T>(response: Response): Promise<T> {
  return (await response.json()) as T;
}

export type ErrorJson = {
  error: { code: string; message: string; details?: Record<string, unknown> };
};

/** Polling has no LISTEN to wait for: a stream waits as soon as it asks. */
function withWaitingHook(
  waiter: RunEventWaiter,
  onWaiting: (runId: string) => void,
): RunEventWaiter {
  return {
    waitForEvents(runId, timeoutMs, signal) {
      const waiting = waiter.waitForEvents(runId, timeoutMs, signal);
      onWaiting(runId);
      return waiting;
    },
  };
}
