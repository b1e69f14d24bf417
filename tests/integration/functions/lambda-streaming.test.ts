import { afterAll, beforeAll, expect, test } from "vitest";
import { mintDevToken } from "../../../infra/local/dev-token.ts";
import type { Run } from "../../../shared/contracts/run.ts";
import { functionsEntryEnv } from "../../support/functions-entry-env.ts";
import type { TestDatabase } from "../../support/postgres.ts";
import { functionUrlEvent } from "./support/lambda-events.ts";
import {
  installLambdaStreamingRuntime,
  invokeStreaming,
  type StreamedResponse,
} from "./support/lambda-streaming-runtime.ts";

// The deployed Lambda entry (functions/entry/lambda.ts in its default `stream` mode, as
// sst.config.ts deploys it behind a RESPONSE_STREAM Function URL): an SSE response reaches
// the client event by event while the run is still going.

const SECRET = "lambda-stream-secret-0123456789abcdef";
let database: TestDatabase;
let handler: unknown;
let token: string;
const saved = { ...process.env };

beforeAll(async () => {
  let vars: Record<string, string>;
  ({ database, vars } = await functionsEntryEnv({
    devJwtSecret: SECRET,
    queuePrefix: "lambda-stream",
    logLevel: "silent",
  }));
  Object.assign(process.env, vars);
  delete process.env.WORKCELL_LAMBDA_RESPONSE_MODE;
  installLambdaStreamingRuntime();
  ({ handler } = await import("../../../functions/entry/lambda.ts"));
  token = await mintDevToken(SECRET, "alice");
});
afterAll(async () => {
  process.env = saved;
  delete (globalThis as Record<string, unknown>).awslambda;
  await database?.drop();
});

const auth = () => ({ authorization: `Bearer ${token}` });

async function readAll(response: StreamedResponse): Promise<string> {
  let text = "";
  for (let next = await response.body.next(); !next.done; next = await response.body.next()) {
    text += next.value.toString();
  }
  return text;
}

async function appendEvent(run: Run, type: string, data: Record<string, unknown>) {
  await database.sql`insert into run_events (run_id, uid, seq, type, data)
    select ${run.run_id}, uid, coalesce((select max(seq) from run_events where run_id = ${run.run_id}), 0) + 1,
      ${type}, ${JSON.stringify(data)}::jsonb from agent_runs where run_id = ${run.run_id}`;
}

test("an ordinary request answers through the streaming handler with its status and headers", async () => {
  const response = await invokeStreaming(
    handler,
    functionUrlEvent({ method: "GET", path: "/v1/healthz" }),
  );
  expect(response.metadata.statusCode).toBe(200);
  expect(response.metadata.headers["content-type"]).toMatch(/^application\/json/);
  expect(JSON.parse(await readAll(response))).toMatchObject({
    // No agent-host heartbeats here: dependencies answer, no node is ready.
    status: "degraded",
    components: { db: "ok", nodes: "none_ready" },
  });
  await response.done;
});

test("the first SSE event arrives before the run ends; the stream closes after run.completed", async () => {
  const created = await invokeStreaming(
    handler,
    functionUrlEvent({
      method: "POST",
      path: "/v1/runs",
      headers: { ...auth(), "content-type": "application/json" },
      body: JSON.stringify({ input: "echo hi" }),
    }),
  );
  expect(created.metadata.statusCode).toBe(202);
  const { run } = JSON.parse(await readAll(created)) as { run: Run };
  await database.sql`update agent_runs set status = 'running', attempt = 1, owner_node = 'n1',
    lease_expires_at = now() + interval '5 minutes', started_at = now() where run_id = ${run.run_id}`;
  await appendEvent(run, "run.status", { status: "running" });

  const events = await invokeStreaming(
    handler,
    functionUrlEvent({ method: "GET", path: `/v1/runs/${run.run_id}/events`, headers: auth() }),
  );
  expect(events.metadata.statusCode).toBe(200);
  expect(events.metadata.headers["content-type"]).toMatch(/^text\/event-stream/);
  let text = "";
  while (!text.includes("event: run.status")) {
    const next = await events.body.next();
    if (next.done) throw new Error(`the stream ended before its first event: ${text}`);
    text += next.value.toString();
  }
  // The client holds the first event while the run is still running and the handler has
  // not returned: the response is streamed, not buffered until the end.
  const [row] = await database.sql<{ status: string }[]>`
    select status from agent_runs where run_id = ${run.run_id}`;
  expect(row?.status).toBe("running");
  expect(text).not.toContain("run.completed");
  let returned = false;
  void events.done.then(() => {
    returned = true;
  });
  await new Promise((resolve) => setImmediate(resolve));
  expect(returned).toBe(false);

  await database.sql.begin(async (tx) => {
    await tx`update agent_runs set status = 'succeeded', finished_at = now() where run_id = ${run.run_id}`;
    await tx`insert into run_events (run_id, uid, seq, type, data)
      select ${run.run_id}, uid, (select max(seq) from run_events where run_id = ${run.run_id}) + 1,
        'run.completed', ${JSON.stringify({ status: "succeeded" })}::jsonb
      from agent_runs where run_id = ${run.run_id}`;
  });
  text += await readAll(events);
  await events.done;
  expect(text).toContain("event: run.completed");
  expect(text.indexOf("event: run.status")).toBeLessThan(text.indexOf("event: run.completed"));
});
