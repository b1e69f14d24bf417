import { randomBytes } from "node:crypto";
import type { OpenAPIHono } from "@hono/zod-openapi";
import { exportJWK, generateKeyPair } from "jose";
import { createApp } from "../../../functions/app.ts";
import type { AppEnv } from "../../../functions/app-env.ts";
import { createAttachmentDeps } from "../../../functions/attachments/create-attachment-deps.ts";
import { createDevTokenVerifier } from "../../../functions/auth/dev-token-verifier.ts";
import { createCapabilityMinter } from "../../../functions/capability/create-capability-minter.ts";
import { createHttpDataPlaneClient } from "../../../functions/data-plane/http-data-plane-client.ts";
import { createHealthProbes } from "../../../functions/health/health-probes.ts";
import { createSqsRunQueue } from "../../../functions/queue/sqs-run-queue.ts";
import { createPollingRunEventWaiter } from "../../../functions/run-events/run-event-waiter.ts";
import { createSkillsDeps } from "../../../functions/skills/create-skills-deps.ts";
import { createHttpSkillsDataPlane } from "../../../functions/skills/http-skills-data-plane.ts";
import {
  DEV_TOKEN_AUDIENCE,
  DEV_TOKEN_ISSUER,
  mintDevToken,
} from "../../../infra/local/dev-token.ts";
import { ed25519PrivateJwkVar } from "../../../shared/env/env-vars.ts";
import { freshBucket, s3Client } from "../../support/aws.ts";
import { silentLogger } from "../sandbox/sandbox-fixture.ts";
import type { RunWorld } from "./run-harness.ts";

/** Nothing listens here: the routes these tests call never reach the data plane. */
const NO_DATA_PLANE_URL = "http://127.0.0.1:1";

export type RunApi = {
  app: OpenAPIHono<AppEnv>;
  /** One request through the whole app, in-process, as `uid`. */
  call(method: string, path: string, uid: string, body?: unknown): Promise<Response>;
};

/**
 * The control plane's app (functions/app.ts, with its default RunChangesSource) over the
 * run world's database and run queue, so a test can submit runs and read them back
 * through the API while the world's worker executes them.
 */
export async function runApi(world: RunWorld): Promise<RunApi> {
  const s3 = s3Client();
  const bucket = await freshBucket(s3);
  const { privateKey } = await generateKeyPair("EdDSA", { crv: "Ed25519", extractable: true });
  const privateJwk = ed25519PrivateJwkVar().parse(JSON.stringify(await exportJWK(privateKey)));
  const capabilities = createCapabilityMinter({ privateJwk });
  const secret = randomBytes(32).toString("base64url");
  const app = createApp({
    logger: silentLogger,
    health: createHealthProbes({
      db: world.db,
      sqs: world.sqs,
      runQueueUrl: world.queueUrl,
      s3,
      attachmentsBucket: bucket,
    }),
    db: world.db,
    auth: createDevTokenVerifier({
      secret,
      issuer: DEV_TOKEN_ISSUER,
      audience: DEV_TOKEN_AUDIENCE,
      adminClaim: "admin",
    }),
    runQueue: createSqsRunQueue({ sqs: world.sqs, queueUrl: world.queueUrl }),
    dataPlane: createHttpDataPlaneClient({ baseUrl: NO_DATA_PLANE_URL, capabilities }),
    capabilities,
    dataPlaneUrl: NO_DATA_PLANE_URL,
    runEvents: createPollingRunEventWaiter(),
    attachments: createAttachmentDeps({
      s3,
      bucket,
      dataPlaneUrl: NO_DATA_PLANE_URL,
      capabilities,
    }),
    ...createSkillsDeps({
      s3,
      bucket,
      sqs: world.sqs,
      queueUrl: world.queueUrl,
      skillsDataPlane: createHttpSkillsDataPlane({ baseUrl: NO_DATA_PLANE_URL, capabilities }),
    }),
  });
  return {
    app,
    async call(method, path, uid, body) {
      const headers: Record<string, string> = {
        authorization: `Bearer ${await mintDevToken(secret, uid)}`,
      };
      if (body !== undefined) headers["content-type"] = "application/json";
      return app.request(path, {
        method,
        headers,
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
    },
  };
}
