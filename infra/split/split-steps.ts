// The steps of docs/deploy/split.md, one function each, so a test (or an operator's own
// script) can run them one by one. Every service is a separate process started exactly as
// the page says (`node <entry>` with its environment); nothing here reaches into them.
import { randomBytes } from "node:crypto";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import postgres from "postgres";
import { createAwsClients } from "../../shared/aws/create-aws-clients.ts";
import { ensureLocalAwsResources } from "../local/local-aws.ts";
import { runToCompletion, type ServiceProcess, startServiceProcess } from "./service-process.ts";

/** The repository root: every entry below is started from it. */
export const REPO_ROOT = join(dirname(fileURLToPath(import.meta.url)), "../..");
/** The emulator's credentials: fauxqs checks none, the SDK wants some. */
export const EMULATOR_CREDENTIALS = { AWS_ACCESS_KEY_ID: "test", AWS_SECRET_ACCESS_KEY: "test" };
const EMULATOR_REGION = "us-east-1";
const STEP_TIMEOUT_MS = 120_000;
const SERVICE_READY_TIMEOUT_MS = 120_000;

/** The process environment every service inherits: PATH only, never the caller's secrets. */
function baseEnv(): Record<string, string | undefined> {
  return { PATH: process.env.PATH, HOME: process.env.HOME };
}

/** Step 1a: `createdb`: a database of its own on any reachable server; returns its URL. */
export async function createDatabase(adminUrl: string, name?: string): Promise<string> {
  const database = name ?? `workcell_split_${randomBytes(6).toString("hex")}`;
  if (!/^[a-z_][a-z0-9_]{0,62}$/.test(database)) {
    throw new Error("the database name must be lower-case letters, digits and '_' (at most 63)");
  }
  const admin = postgres(adminUrl, {
    max: 1,
    onnotice: () => {},
    connect_timeout: 10,
    connection: { statement_timeout: 30_000 },
  });
  try {
    await admin.unsafe(`CREATE DATABASE ${database}`);
  } finally {
    await admin.end({ timeout: 5 });
  }
  const url = new URL(adminUrl);
  url.pathname = `/${database}`;
  return url.toString();
}

/** Drops what createDatabase made (WITH (FORCE): a killed node may still hold connections). */
export async function dropDatabase(adminUrl: string, databaseUrl: string): Promise<void> {
  const database = new URL(databaseUrl).pathname.slice(1);
  const admin = postgres(adminUrl, { max: 1, onnotice: () => {}, connect_timeout: 10 });
  try {
    await admin.unsafe(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
  } finally {
    await admin.end({ timeout: 5 });
  }
}

/** Step 1b: `node infra/ops/main.ts migrate` (the URL in the environment, never in argv). */
export async function migrateDatabase(databaseUrl: string): Promise<void> {
  await runToCompletion({
    command: process.execPath,
    args: [join(REPO_ROOT, "infra/ops/main.ts"), "migrate"],
    env: { ...baseEnv(), DATABASE_URL: databaseUrl },
    cwd: REPO_ROOT,
    timeoutMs: STEP_TIMEOUT_MS,
  });
}

export type CapabilityKeys = { privateJwk: string; publicJwk: string };

/** Step 1c: `node infra/ops/main.ts keys generate` (its `json` format, parsed). */
export async function generateKeys(): Promise<CapabilityKeys> {
  const out = await runToCompletion({
    command: process.execPath,
    args: [join(REPO_ROOT, "infra/ops/main.ts"), "keys", "generate", "--format", "json"],
    env: baseEnv(),
    cwd: REPO_ROOT,
    timeoutMs: STEP_TIMEOUT_MS,
  });
  const parsed = JSON.parse(out) as Record<string, unknown>;
  const privateJwk = parsed.CAPABILITY_PRIVATE_KEY;
  const publicJwk = parsed.CAPABILITY_PUBLIC_KEY;
  if (typeof privateJwk !== "string" || typeof publicJwk !== "string") {
    throw new Error("`keys generate --format json` printed no key pair");
  }
  return { privateJwk, publicJwk };
}

export type Emulator = {
  process: ServiceProcess;
  endpoint: string;
  runQueueUrl: string;
  deadLetterQueueUrl: string;
  attachmentsBucket: string;
};

/**
 * Step 1d: fauxqs (SQS + S3 on one port) as its own process, `FAUXQS_PORT=… npx fauxqs`,
 * then the run queue with its DLQ (redrive) and the attachments bucket through the real SDK.
 */
export async function startEmulator(port: number): Promise<Emulator> {
  const cli = join(dirname(fileURLToPath(import.meta.resolve("fauxqs"))), "cli.js");
  const endpoint = `http://127.0.0.1:${port}`;
  const emulator = await startServiceProcess({
    name: "fauxqs",
    command: process.execPath,
    args: [cli],
    // No FAUXQS_HOST: fauxqs takes it as a domain for virtual-host queue URLs
    // (sqs.<region>.<host>), not as a bind address; queue URLs then name the request's host.
    env: { ...baseEnv(), FAUXQS_PORT: String(port), FAUXQS_LOGGER: "false" },
    cwd: REPO_ROOT,
    readyUrl: `${endpoint}/`,
    readyTimeoutMs: SERVICE_READY_TIMEOUT_MS,
  });
  try {
    const { sqs, s3 } = createAwsClients(
      { AWS_ENDPOINT_URL: endpoint, AWS_REGION: EMULATOR_REGION },
      { accessKeyId: "test", secretAccessKey: "test" },
    );
    const resources = await ensureLocalAwsResources(sqs, s3);
    sqs.destroy();
    s3.destroy();
    return { process: emulator, endpoint, ...resources };
  } catch (error) {
    await emulator.stop(5_000);
    throw error;
  }
}

/** What every service of one deployment shares (docs/deploy/split.md). */
export type SharedSettings = {
  databaseUrl: string;
  keys: CapabilityKeys;
  emulator: Emulator;
  nodeTtlSeconds: number;
  logLevel: string;
};

function awsEnv(s: SharedSettings) {
  return {
    RUN_QUEUE_URL: s.emulator.runQueueUrl,
    ATTACHMENTS_BUCKET: s.emulator.attachmentsBucket,
    AWS_ENDPOINT_URL: s.emulator.endpoint,
    AWS_REGION: EMULATOR_REGION,
    ...EMULATOR_CREDENTIALS,
  };
}

/** Step 2: the control plane's environment (shared/env/functions-env.ts + the Node entry's). */
export function functionsEnv(
  s: SharedSettings,
  p: {
    port: number;
    metricsPort: number;
    devJwtSecret: string;
    dataPlaneUrl: string;
    sweepIntervalMs: number;
  },
): Record<string, string> {
  return {
    DATABASE_URL: s.databaseUrl,
    ...awsEnv(s),
    AUTH_MODE: "dev",
    DEV_JWT_SECRET: p.devJwtSecret,
    // The claim infra/local/dev-token.ts sets for an admin token: the admin routes work.
    ADMIN_CLAIM: "admin",
    CAPABILITY_PRIVATE_KEY: s.keys.privateJwk,
    DATA_PLANE_URL: p.dataPlaneUrl,
    NODE_TTL_SECONDS: String(s.nodeTtlSeconds),
    SWEEP_INTERVAL_MS: String(p.sweepIntervalMs),
    HOST: "127.0.0.1",
    PORT: String(p.port),
    METRICS_HOST: "127.0.0.1",
    METRICS_PORT: String(p.metricsPort),
    LOG_LEVEL: s.logLevel,
  };
}

/** Step 2: `node functions/entry/node.ts`, ready when `/v1/healthz` answers. */
export async function startFunctions(env: Record<string, string>): Promise<ServiceProcess> {
  return startServiceProcess({
    name: "functions",
    command: process.execPath,
    args: [join(REPO_ROOT, "functions/entry/node.ts")],
    env: { ...baseEnv(), ...env },
    cwd: REPO_ROOT,
    readyUrl: `http://127.0.0.1:${env.PORT}/v1/healthz`,
    readyTimeoutMs: SERVICE_READY_TIMEOUT_MS,
  });
}

export type NodeSettings = {
  nodeId: string;
  dataPlanePort: number;
  metricsPort: number;
  dataRoot: string;
  sandboxStateDir: string;
  heartbeatSeconds: number;
  /** Anything else of shared/env/agent-host-env.ts (SANDBOX_IMAGE, WORKER_CONCURRENCY, …). */
  extra: Record<string, string>;
};

/** Step 3: one agent-host's environment: the shared part, then what is this node's own. */
export function agentHostEnv(s: SharedSettings, n: NodeSettings): Record<string, string> {
  return {
    DATABASE_URL: s.databaseUrl,
    ...awsEnv(s),
    RUN_DLQ_URL: s.emulator.deadLetterQueueUrl,
    CAPABILITY_PUBLIC_KEY: s.keys.publicJwk,
    DATA_ROOT: n.dataRoot,
    NODE_ID: n.nodeId,
    DATA_PLANE_HOST: "127.0.0.1",
    DATA_PLANE_PORT: String(n.dataPlanePort),
    DATA_PLANE_PUBLIC_URL: `http://127.0.0.1:${n.dataPlanePort}`,
    METRICS_HOST: "127.0.0.1",
    METRICS_PORT: String(n.metricsPort),
    SANDBOX_STATE_DIR: n.sandboxStateDir,
    NODE_TTL_SECONDS: String(s.nodeTtlSeconds),
    NODE_HEARTBEAT_SECONDS: String(n.heartbeatSeconds),
    LOG_LEVEL: s.logLevel,
    ...n.extra,
  };
}

/** Step 3: `node agent-host/main.ts`, ready when its data plane's `/healthz` answers. */
export async function startAgentHostProcess(env: Record<string, string>): Promise<ServiceProcess> {
  return startServiceProcess({
    name: `agent-host ${env.NODE_ID}`,
    command: process.execPath,
    args: [join(REPO_ROOT, "agent-host/main.ts")],
    env: { ...baseEnv(), ...env },
    cwd: REPO_ROOT,
    readyUrl: `${env.DATA_PLANE_PUBLIC_URL}/healthz`,
    readyTimeoutMs: SERVICE_READY_TIMEOUT_MS,
  });
}
