import { execFile } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { mintDevToken } from "../../../infra/local/dev-token.ts";
import type { Run } from "../../../shared/contracts/run.ts";
import { sqsClient } from "../../support/aws.ts";
import { functionsEntryEnv } from "../../support/functions-entry-env.ts";
import type { TestDatabase } from "../../support/postgres.ts";
import { checkCors } from "./support/check-cors.ts";
import { checkPersonalTokens } from "./support/check-personal-tokens.ts";
import { driveWithRealWorker, receiveRunIds } from "./support/drive.ts";
import type { ServerProcess } from "./support/server-process.ts";
import {
  startWranglerDev,
  WRANGLER,
  WRANGLER_CONFIG,
  WRANGLER_ENV,
} from "./support/wrangler-dev.ts";

// The Workers build of the control plane (infra/wrangler.toml, functions/entry/worker.ts):
// bundled by `wrangler deploy --dry-run`, and run by `wrangler dev` in the real workerd
// runtime from npm (offline), against the test Postgres (postgres.js over TCP) and fauxqs.

const run = promisify(execFile);
const SECRET = "worker-test-secret-0123456789abcdef";
const CONSOLE_ORIGIN = "https://console.example.com";

let scratch: string;
let database: TestDatabase;
let queueUrl: string;
let vars: Record<string, string>;
let worker: ServerProcess;

beforeAll(async () => {
  scratch = await mkdtemp(join(tmpdir(), "workcell-wrangler-"));
  ({ database, queueUrl, vars } = await functionsEntryEnv({
    devJwtSecret: SECRET,
    queuePrefix: "worker",
    logLevel: "warn",
  }));
  worker = await startWranglerDev({
    scratch,
    vars: { ...vars, WORKCELL_CORS_ORIGINS: CONSOLE_ORIGIN },
    logLevel: "warn",
  });
}, 120_000);
afterAll(async () => {
  await worker?.stop();
  await database?.drop();
  await rm(scratch, { recursive: true, force: true });
});

describe("Cloudflare Workers", () => {
  test("wrangler deploy --dry-run bundles the Worker without node:fs", async () => {
    const outdir = join(scratch, "bundle");
    await run(WRANGLER, ["deploy", "--config", WRANGLER_CONFIG, "--dry-run", "--outdir", outdir], {
      env: WRANGLER_ENV,
      cwd: scratch,
    });
    const bundle = await readFile(join(outdir, "worker.js"), "utf8");
    expect(bundle.length).toBeGreaterThan(0);
    expect(bundle).not.toMatch(/["']node:fs(\/promises)?["']/);
  });

  test("under wrangler dev: health, then a thread and a run executed by a real agent-host to `succeeded`", async () => {
    const health = await fetch(`${worker.url}/v1/healthz`);
    expect(await health.json(), worker.output()).toEqual({
      // No agent-host yet: healthy dependencies, no ready node.
      status: "degraded",
      components: { db: "ok", queue: "ok", storage: "ok", nodes: "none_ready" },
    });
    await driveWithRealWorker({
      url: worker.url,
      token: await mintDevToken(SECRET, "alice"),
      functionsVars: vars,
      nodePrefix: "wrangler-dev",
    });
  }, 180_000);

  test("CORS under wrangler dev: the allowed origin's preflight and request; nothing for others", async () => {
    await checkCors({
      url: worker.url,
      token: await mintDevToken(SECRET, "cora"),
      allowedOrigin: CONSOLE_ORIGIN,
    });
  });

  test("personal access tokens under wrangler dev: scoped, revoked and expired at the next request", async () => {
    await checkPersonalTokens({
      url: worker.url,
      signInToken: await mintDevToken(SECRET, "pat-user"),
      sql: database.sql,
      output: () => worker.output(),
    });
  });

  test("the Cron Trigger runs the dispatch sweeper", async () => {
    const token = await mintDevToken(SECRET, "alice");
    const res = await fetch(`${worker.url}/v1/runs`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify({ input: "lost" }),
    });
    const { run: created } = (await res.json()) as { run: Run };
    await receiveRunIds(sqsClient(), queueUrl, 1);
    await database.sql`update agent_runs set dispatched_at = null where run_id = ${created.run_id}`;
    const scheduled = await fetch(`${worker.url}/__scheduled?cron=*+*+*+*+*`);
    expect(scheduled.status).toBe(200);
    expect(await receiveRunIds(sqsClient(), queueUrl, 1)).toEqual([created.run_id]);
  });
});
