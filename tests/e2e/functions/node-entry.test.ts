import { join } from "node:path";
import { afterAll, beforeAll, expect, test } from "vitest";
import { mintDevToken } from "../../../infra/local/dev-token.ts";
import type { Run } from "../../../shared/contracts/run.ts";
import { freePort } from "../../setup/free-port.ts";
import { sqsClient } from "../../support/aws.ts";
import { functionsEntryEnv } from "../../support/functions-entry-env.ts";
import type { TestDatabase } from "../../support/postgres.ts";
import { checkCors } from "./support/check-cors.ts";
import { checkPersonalTokens } from "./support/check-personal-tokens.ts";
import { driveWithRealWorker, receiveRunIds } from "./support/drive.ts";
import { type ServerProcess, startServerProcess } from "./support/server-process.ts";

// functions/entry/node.ts as its own process, configured only by its environment, over
// real HTTP against the test Postgres and fauxqs: a self-hosted deployment.

const ROOT = join(import.meta.dirname, "../../..");
const SECRET = "node-entry-secret-0123456789abcdef";
const CONSOLE_ORIGIN = "https://console.example.com";

let database: TestDatabase;
let queueUrl: string;
let vars: Record<string, string>;
let server: ServerProcess;

beforeAll(async () => {
  ({ database, queueUrl, vars } = await functionsEntryEnv({
    devJwtSecret: SECRET,
    queuePrefix: "node",
    logLevel: "warn",
  }));
  const port = await freePort();
  server = await startServerProcess({
    command: process.execPath,
    args: [join(ROOT, "functions/entry/node.ts")],
    env: {
      PATH: process.env.PATH,
      ...vars,
      HOST: "127.0.0.1",
      PORT: String(port),
      // Not the default 9464: parallel tests (and other engineers) share the host.
      METRICS_PORT: String(await freePort()),
      SWEEP_INTERVAL_MS: "1000",
      WORKCELL_CORS_ORIGINS: `${CONSOLE_ORIGIN},http://localhost:5173`,
    },
    cwd: ROOT,
    url: `http://127.0.0.1:${port}`,
    readyPath: "/v1/healthz",
    readyTimeoutMs: 30_000,
  });
});
afterAll(async () => {
  await server?.stop();
  await database?.drop();
});

test("a thread and a run over HTTP, executed by a real agent-host, with live events to `succeeded`", async () => {
  await driveWithRealWorker({
    url: server.url,
    token: await mintDevToken(SECRET, "alice"),
    functionsVars: vars,
    nodePrefix: "node-entry",
  });
}, 180_000);

test("CORS (WORKCELL_CORS_ORIGINS): the allowed origin's preflight and request; nothing for others", async () => {
  await checkCors({
    url: server.url,
    token: await mintDevToken(SECRET, "cora"),
    allowedOrigin: CONSOLE_ORIGIN,
  });
});

test("the in-process sweeper (SWEEP_INTERVAL_MS) re-dispatches a run whose message was lost", async () => {
  const res = await fetch(`${server.url}/v1/runs`, {
    method: "POST",
    headers: {
      authorization: `Bearer ${await mintDevToken(SECRET, "bob")}`,
      "content-type": "application/json",
    },
    body: JSON.stringify({ input: "lost" }),
  });
  const { run } = (await res.json()) as { run: Run };
  await receiveRunIds(sqsClient(), queueUrl, 1);
  await database.sql`update agent_runs set dispatched_at = null where run_id = ${run.run_id}`;
  expect(await receiveRunIds(sqsClient(), queueUrl, 1)).toEqual([run.run_id]);
});

test("a bad environment stops the process with every problem named, no value quoted", async () => {
  const { execFile } = await import("node:child_process");
  const result = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
    execFile(
      process.execPath,
      [join(ROOT, "functions/entry/node.ts")],
      {
        env: {
          PATH: process.env.PATH,
          DATABASE_URL: "mysql://secret-password@x/y",
          AUTH_MODE: "oidc",
        },
      },
      (error, _stdout, stderr) =>
        resolve({ code: error?.code === undefined ? 0 : Number(error.code), stderr }),
    );
  });
  expect(result.code).not.toBe(0);
  for (const variable of [
    "DATABASE_URL",
    "RUN_QUEUE_URL",
    "OIDC_ISSUER",
    "CAPABILITY_PRIVATE_KEY",
  ]) {
    expect(result.stderr).toContain(variable);
  }
  expect(result.stderr).not.toContain("secret-password");
});

test("personal access tokens: scoped, and refused on the next request once revoked or expired", async () => {
  await checkPersonalTokens({
    url: server.url,
    signInToken: await mintDevToken(SECRET, "pat-user"),
    sql: database.sql,
    output: () => server.output(),
  });
});
