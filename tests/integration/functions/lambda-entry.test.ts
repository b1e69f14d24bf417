import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { mintDevToken } from "../../../infra/local/dev-token.ts";
import type { Project } from "../../../shared/contracts/project.ts";
import type { Run } from "../../../shared/contracts/run.ts";
import type { Thread } from "../../../shared/contracts/thread.ts";
import { functionsEntryEnv } from "../../support/functions-entry-env.ts";
import type { TestDatabase } from "../../support/postgres.ts";
import {
  apiGatewayV2Event,
  functionUrlEvent,
  type LambdaHttpEvent,
} from "./support/lambda-events.ts";

// The real Lambda entries (functions/entry/lambda.ts in its buffered mode, sweeper.ts),
// configured by their environment exactly as in AWS, answering API Gateway v2 and Function
// URL events, against the test Postgres and fauxqs. The streaming mode that sst.config.ts
// deploys is lambda-streaming.test.ts.

type LambdaResult = {
  statusCode: number;
  headers: Record<string, string>;
  body: string;
  isBase64Encoded: boolean;
};

const SECRET = "lambda-test-secret-0123456789abcdef";
let database: TestDatabase;
let handler: (event: LambdaHttpEvent) => Promise<LambdaResult>;
let sweep: () => Promise<{ ran: boolean; sent: number; failed: number; nodeLost: number }>;
let token: string;
const saved = { ...process.env };

beforeAll(async () => {
  let vars: Record<string, string>;
  ({ database, vars } = await functionsEntryEnv({
    devJwtSecret: SECRET,
    queuePrefix: "lambda",
    logLevel: "silent",
  }));
  Object.assign(process.env, vars, { WORKCELL_LAMBDA_RESPONSE_MODE: "buffered" });
  ({ handler } = (await import("../../../functions/entry/lambda.ts")) as unknown as {
    handler: typeof handler;
  });
  ({ handler: sweep } = await import("../../../functions/entry/sweeper.ts"));
  token = await mintDevToken(SECRET, "alice");
});
afterAll(async () => {
  process.env = saved;
  await database?.drop();
});

const auth = () => ({ authorization: `Bearer ${token}` });

describe.each([
  ["API Gateway v2", apiGatewayV2Event],
  ["Function URL", functionUrlEvent],
])("Lambda handler behind %s", (_name, event) => {
  test("health, OpenAPI and the 401 of a missing token", async () => {
    const health = await handler(event({ method: "GET", path: "/v1/healthz" }));
    expect(health.statusCode).toBe(200);
    // No agent-host in this test: the API is up, no node can take runs yet.
    expect(JSON.parse(health.body)).toEqual({
      status: "degraded",
      components: { db: "ok", queue: "ok", storage: "ok", nodes: "none_ready" },
    });
    const doc = await handler(event({ method: "GET", path: "/openapi.json" }));
    expect(JSON.parse(doc.body).paths).toHaveProperty("/v1/runs");
    const refused = await handler(event({ method: "GET", path: "/v1/projects" }));
    expect(refused.statusCode).toBe(401);
    expect(refused.headers["x-request-id"]).toBeTruthy();
  });

  test("a thread and a run, with query strings and a base64 body", async () => {
    const created = await handler(
      event({
        method: "POST",
        path: "/v1/threads",
        headers: { ...auth(), "content-type": "application/json" },
        body: JSON.stringify({ title: "from lambda" }),
        base64: true,
      }),
    );
    expect(created.statusCode).toBe(201);
    const thread = JSON.parse(created.body) as Thread;
    const submitted = await handler(
      event({
        method: "POST",
        path: `/v1/threads/${thread.thread_id}/runs`,
        headers: {
          ...auth(),
          "content-type": "application/json",
          "idempotency-key": crypto.randomUUID(),
        },
        body: JSON.stringify({ input: "echo hi" }),
      }),
    );
    expect(submitted.statusCode).toBe(202);
    const run = JSON.parse(submitted.body) as Run;
    const page = await handler(
      event({ method: "GET", path: "/v1/threads", query: "limit=1", headers: auth() }),
    );
    expect(JSON.parse(page.body).items).toHaveLength(1);
    const project = await handler(
      event({ method: "GET", path: `/v1/projects/${thread.project_id}`, headers: auth() }),
    );
    expect((JSON.parse(project.body) as Project).implicit).toBe(true);

    // A finished run's event stream comes back whole in one (buffered) response.
    await handler(
      event({ method: "POST", path: `/v1/runs/${run.run_id}/cancel`, headers: auth() }),
    );
    const events = await handler(
      event({ method: "GET", path: `/v1/runs/${run.run_id}/events`, headers: auth() }),
    );
    expect(events.statusCode).toBe(200);
    expect(events.headers["content-type"]).toMatch(/^text\/event-stream/);
    const text = events.isBase64Encoded
      ? Buffer.from(events.body, "base64").toString()
      : events.body;
    expect(text).toContain("event: run.completed");
  });
});

test("personal access tokens through the Lambda entry: accepted, then refused on the next invocation once revoked", async () => {
  const created = await handler(
    apiGatewayV2Event({
      method: "POST",
      path: "/v1/tokens",
      headers: { ...auth(), "content-type": "application/json" },
      body: JSON.stringify({ name: "lambda", scopes: ["runs"] }),
    }),
  );
  expect(created.statusCode).toBe(201);
  const pat = JSON.parse(created.body) as { token_id: string; token: string };
  const asPat = () =>
    handler(
      apiGatewayV2Event({
        method: "GET",
        path: "/v1/threads",
        headers: { authorization: `Bearer ${pat.token}` },
      }),
    );
  expect((await asPat()).statusCode).toBe(200);
  const revoked = await handler(
    apiGatewayV2Event({ method: "DELETE", path: `/v1/tokens/${pat.token_id}`, headers: auth() }),
  );
  expect(revoked.statusCode).toBe(204);
  const refused = await asPat();
  expect(refused.statusCode).toBe(401);
  expect(refused.body).not.toContain(pat.token.slice(-43));
});

test("the scheduled sweeper entry ends an expired lease and re-dispatches a pending run whose dispatch was lost", async () => {
  await sweep(); // whatever is already due
  const created = await handler(
    apiGatewayV2Event({
      method: "POST",
      path: "/v1/runs",
      headers: { ...auth(), "content-type": "application/json" },
      body: JSON.stringify({ input: "lost" }),
    }),
  );
  const { run } = JSON.parse(created.body) as { run: Run };
  await database.sql`update agent_runs set dispatched_at = null where run_id = ${run.run_id}`;
  const dead = await handler(
    apiGatewayV2Event({
      method: "POST",
      path: "/v1/runs",
      headers: { ...auth(), "content-type": "application/json" },
      body: JSON.stringify({ input: "node died" }),
    }),
  );
  const { run: deadRun } = JSON.parse(dead.body) as { run: Run };
  await database.sql`update agent_runs set status = 'running', attempt = 1,
    owner_node = 'gone', lease_expires_at = now() - interval '1 second', started_at = now()
    where run_id = ${deadRun.run_id}`;
  expect(await sweep()).toEqual({ ran: true, sent: 1, failed: 0, nodeLost: 1 });
  expect(await sweep()).toEqual({ ran: true, sent: 0, failed: 0, nodeLost: 0 });
  const [ended] = await database.sql<{ status: string; code: string }[]>`
    select status, error ->> 'code' as code from agent_runs where run_id = ${deadRun.run_id}`;
  expect(ended).toEqual({ status: "failed", code: "node_lost" });
});
