import { z } from "zod";
import offlineSandboxImage from "../../infra/sandbox-image/test-image.json" with { type: "json" };
import { networkDefaultAllowVar } from "../network/network-policy.ts";
import { secretsKeyVar } from "../secrets/secret-envelope.ts";
import { secretsKmsEnv } from "../secrets/secrets-kms-env.ts";
import {
  absolutePathVar,
  bucketNameVar,
  corsOriginsVar,
  decimalVar,
  ed25519PublicJwkVar,
  httpUrlVar,
  intVar,
  logLevelVar,
  portVar,
  postgresUrlVar,
} from "./env-vars.ts";
import { nodeHeartbeatEnv, nodeTtlEnv } from "./liveness-env.ts";
import { metricsEnvShape } from "./metrics-env.ts";

export const DEFAULT_DATA_PLANE_PORT = 8081;

/** SANDBOX_IMAGE, shared by an agent-host and the local stack. */
export function sandboxImageVar() {
  return z
    .string()
    .min(1)
    .optional()
    .describe(
      "Container image of sandboxes; default: workcell-sandbox:<key>, the image built with the Runtime Assets at RUNTIME_ASSETS_DIR (same packages, libc and bash as /runtime). Another image runs the bash tool through its own /bin/sh.",
    );
}
// The offline busybox image that infra/sandbox-image/build-test-image.sh builds on any
// machine: tests that need a tiny image name it; it is no default (the container tier's
// default is the Runtime Assets image, agent-host/runtime/sandbox-image.ts). Its name
// lives in that JSON file only.
export const TEST_SANDBOX_IMAGE: string = offlineSandboxImage.name;
/** Where scripts/ensure-system.sh puts the Runtime Assets (infra/runtime-assets/). */
export const DEFAULT_RUNTIME_ASSETS_DIR = "/var/lib/workcell/runtime-assets/current/tree";
/** Node-local state of process-tier sandboxes (tmpfs mounts, labels); /run is cleared at boot. */
export const DEFAULT_SANDBOX_STATE_DIR = "/run/workcell/process-sandboxes";
export const DEFAULT_SANDBOX_MEMORY_MB = 2048;
export const MIN_SANDBOX_MEMORY_MB = 64;
export const MAX_SANDBOX_MEMORY_MB = 1_048_576;
export const MIN_SANDBOX_CPUS = 0.1;
export const MAX_SANDBOX_CPUS = 256;
export const DEFAULT_SANDBOX_PIDS_LIMIT = 512;
/** Below this, the agent's own tooling (shell, git, a package manager) cannot start. */
export const MIN_SANDBOX_PIDS_LIMIT = 32;
export const MAX_SANDBOX_PIDS_LIMIT = 65_536;
export const DEFAULT_SANDBOX_IDLE_TIMEOUT_SECONDS = 900;
export const MAX_SANDBOX_IDLE_TIMEOUT_SECONDS = 86_400;
export const DEFAULT_SANDBOX_KEEP_WARM_SECONDS = 60;
export const DEFAULT_DOCKER_CALL_TIMEOUT_SECONDS = 30;
export const MAX_DOCKER_CALL_TIMEOUT_SECONDS = 600;
export const MAX_MODEL_REQUEST_TIMEOUT_SECONDS = 3_600;
export const MAX_SANDBOX_KEEP_WARM_SECONDS = 3_600;
/** Blank process-tier sandboxes kept ready for new threads (decision 0185). */
export const DEFAULT_SANDBOX_PROCESS_POOL_SIZE = 2;
export const MAX_SANDBOX_PROCESS_POOL_SIZE = 64;
/** Bounds of SANDBOX_TMPFS_BUDGET_MB (decision 0142): 1 MiB to 1 TiB. */
export const MAX_SANDBOX_TMPFS_BUDGET_MB = 1_048_576;
export const DEFAULT_WORKER_CONCURRENCY = 4;
export const MAX_WORKER_CONCURRENCY = 256;
export const MAX_NODE_ID_CHARS = 63;
/** Longest model id accepted (the API's per-run override has the same bound). */
export const MAX_MODEL_NAME_CHARS = 200;

/** Environment of agent-host/ (one daemon per compute node). */
export const agentHostEnvSchema = z.object({
  DATABASE_URL: postgresUrlVar().describe(
    "Postgres connection URL, e.g. postgres://user:pass@host:5432/workcell.",
  ),
  DATA_ROOT: absolutePathVar().describe(
    "Absolute host directory holding users/ and skills/ (shared by all nodes, e.g. an EFS/NFS mount).",
  ),
  NODE_ID: z
    .string()
    .regex(
      new RegExp(`^[A-Za-z0-9][A-Za-z0-9._-]{0,${MAX_NODE_ID_CHARS - 1}}$`),
      `must be 1 to ${MAX_NODE_ID_CHARS} letters, digits, '.', '_' or '-', starting with a letter or digit`,
    )
    .describe("Stable, unique name of this compute node; it labels the node's sandboxes."),
  RUN_QUEUE_URL: httpUrlVar().describe(
    "URL of the SQS queue for run dispatch and maintenance messages.",
  ),
  RUN_DLQ_URL: httpUrlVar()
    .optional()
    .describe(
      "URL of the run queue's dead-letter queue; messages that can never succeed go there at once (unset: dropped and logged).",
    ),
  ATTACHMENTS_BUCKET: bucketNameVar().describe("S3 bucket attachments are imported from."),
  AWS_REGION: z
    .string()
    .min(1)
    .optional()
    .describe("AWS region of the queue and bucket, e.g. eu-west-1."),
  AWS_ENDPOINT_URL: httpUrlVar()
    .optional()
    .describe("Endpoint override for S3/SQS emulators (fauxqs, LocalStack); leave unset on AWS."),
  CAPABILITY_PUBLIC_KEY: ed25519PublicJwkVar().describe(
    'Ed25519 public key as JWK JSON ({"kty":"OKP","crv":"Ed25519","x":…}) that verifies data-plane capabilities.',
  ),
  DATA_PLANE_PORT: portVar()
    .default(DEFAULT_DATA_PLANE_PORT)
    .describe(`TCP port of the data-plane HTTP API (default ${DEFAULT_DATA_PLANE_PORT}).`),
  ...metricsEnvShape,
  DATA_PLANE_HOST: z
    .string()
    .min(1)
    .default("0.0.0.0")
    .describe("Address the data plane binds (default 0.0.0.0: functions/ and browsers reach it)."),
  DATA_PLANE_PUBLIC_URL: httpUrlVar()
    .optional()
    .describe(
      "URL under which functions/ and browsers reach this node's data plane (recorded in `nodes`); default http://<DATA_PLANE_HOST>:<DATA_PLANE_PORT>.",
    ),
  DATA_PLANE_CORS_ORIGINS: corsOriginsVar()
    .optional()
    .describe(
      "Browser origins allowed to call the data plane's /dp/v1 files API (CORS), comma-separated, e.g. https://console.example.com; `*` for any; unset: none.",
    ),
  SANDBOX_IMAGE: sandboxImageVar(),
  RUNTIME_ASSETS_DIR: absolutePathVar()
    .default(DEFAULT_RUNTIME_ASSETS_DIR)
    .describe(
      `The Runtime Assets tree, mounted read-only at /runtime in both tiers (default ${DEFAULT_RUNTIME_ASSETS_DIR}).`,
    ),
  SANDBOX_STATE_DIR: absolutePathVar()
    .default(DEFAULT_SANDBOX_STATE_DIR)
    .describe(
      `Node-local directory of process-tier sandboxes (default ${DEFAULT_SANDBOX_STATE_DIR}).`,
    ),
  WORKCELL_NETWORK_DEFAULT_ALLOW: networkDefaultAllowVar(),
  WORKCELL_SECRETS_KEY: secretsKeyVar(),
  ...secretsKmsEnv,
  WORKCELL_SECRETS_CA_CERT: absolutePathVar()
    .optional()
    .describe(
      "The deployment CA's certificate (PEM) for TLS towards hosts secrets are bound to (npm run secrets:ca).",
    ),
  WORKCELL_SECRETS_CA_KEY: absolutePathVar()
    .optional()
    .describe(
      "The deployment CA's private key (PEM, 0600; nodes only). Without it and the certificate, secrets are not brokered.",
    ),
  EGRESS_OPEN_CIDRS: z
    .string()
    .optional()
    .describe(
      "Private ranges the egress proxy may connect to for the whole deployment, comma-separated CIDRs (e.g. 10.20.0.0/16); unset: none. The node's own addresses stay closed.",
    ),
  SANDBOX_MEMORY_MB: intVar(MIN_SANDBOX_MEMORY_MB, MAX_SANDBOX_MEMORY_MB)
    .default(DEFAULT_SANDBOX_MEMORY_MB)
    .describe(`Memory limit per sandbox in MiB (default ${DEFAULT_SANDBOX_MEMORY_MB}).`),
  SANDBOX_CPUS: decimalVar(MIN_SANDBOX_CPUS, MAX_SANDBOX_CPUS)
    .optional()
    .describe(
      "CPU limit per sandbox, fractions allowed (default: the node's share, its CPUs / WORKER_CONCURRENCY).",
    ),
  SANDBOX_TMPFS_BUDGET_MB: intVar(1, MAX_SANDBOX_TMPFS_BUDGET_MB)
    .optional()
    .describe(
      "Memory this node's live sandboxes (running and kept warm) may pin in /tmp and home tmpfs, each counted at its full tmpfs sizes, in MiB (default: half the host's memory). Over it the oldest warm sandboxes are evicted first; a create that still does not fit fails sandbox_memory_budget.",
    ),
  SANDBOX_PIDS_LIMIT: intVar(MIN_SANDBOX_PIDS_LIMIT, MAX_SANDBOX_PIDS_LIMIT)
    .default(DEFAULT_SANDBOX_PIDS_LIMIT)
    .describe(`Maximum processes per sandbox (default ${DEFAULT_SANDBOX_PIDS_LIMIT}).`),
  SANDBOX_NETWORK: z
    .string()
    .min(1)
    .default("none")
    .describe("Docker network of sandboxes; `none` (default) gives them no network."),
  SANDBOX_IDLE_TIMEOUT_SECONDS: intVar(1, MAX_SANDBOX_IDLE_TIMEOUT_SECONDS)
    .default(DEFAULT_SANDBOX_IDLE_TIMEOUT_SECONDS)
    .describe(
      `Idle sandboxes are reaped after this many seconds (default ${DEFAULT_SANDBOX_IDLE_TIMEOUT_SECONDS}).`,
    ),
  DOCKER_CALL_TIMEOUT_SECONDS: intVar(1, MAX_DOCKER_CALL_TIMEOUT_SECONDS)
    .default(DEFAULT_DOCKER_CALL_TIMEOUT_SECONDS)
    .describe(
      `Longest one Docker API call may take (inspect, exec create/start, remove), not the command itself; a hung engine then fails the call with a message (default ${DEFAULT_DOCKER_CALL_TIMEOUT_SECONDS}).`,
    ),
  ...nodeTtlEnv,
  ...nodeHeartbeatEnv,
  SANDBOX_KEEP_WARM_SECONDS: intVar(0, MAX_SANDBOX_KEEP_WARM_SECONDS)
    .default(DEFAULT_SANDBOX_KEEP_WARM_SECONDS)
    .describe(
      `After a conversation turn ends, its sandbox stays live this many seconds for the next turn; 0 destroys it at once (default ${DEFAULT_SANDBOX_KEEP_WARM_SECONDS}).`,
    ),
  SANDBOX_PROCESS_POOL_SIZE: intVar(0, MAX_SANDBOX_PROCESS_POOL_SIZE)
    .default(DEFAULT_SANDBOX_PROCESS_POOL_SIZE)
    .describe(
      `Blank process-tier sandboxes (tmpfs, user namespace, no user's files) kept ready so a new thread's first run skips making them; each counts in SANDBOX_TMPFS_BUDGET_MB and gives way first; 0 keeps none (default ${DEFAULT_SANDBOX_PROCESS_POOL_SIZE}).`,
    ),
  WORKDIR_SUBVOLUMES: z
    .enum(["auto", "off"])
    .default("auto")
    .describe(
      "auto (default): on a btrfs data root each new managed Workdir is a subvolume and its checkpoints are read-only snapshots, whatever its size; off: new managed Workdirs are plain directories, checkpoints per file, and the change feed's incremental path for large Workdirs; Workdirs that already are subvolumes keep their snapshots (docs/decisions/0190).",
    ),
  WORKER_CONCURRENCY: intVar(1, MAX_WORKER_CONCURRENCY)
    .default(DEFAULT_WORKER_CONCURRENCY)
    .describe(
      `Runs this node executes at once (default ${DEFAULT_WORKER_CONCURRENCY}), plus one only for a user with no run running anywhere.`,
    ),
  MODEL_BASE_URL: httpUrlVar()
    .optional()
    .describe(
      "Base URL of an OpenAI-compatible Chat Completions server up to the API version, e.g. http://127.0.0.1:11434/v1; unset = the `shell` model (each message runs as a command, no LLM).",
    ),
  MODEL_API_KEY: z
    .string()
    .min(1)
    .optional()
    .describe("Bearer token for MODEL_BASE_URL; leave unset for servers without auth."),
  MODEL_NAME: z
    .string()
    .min(1)
    .max(MAX_MODEL_NAME_CHARS)
    .optional()
    .describe(
      "Model id sent to MODEL_BASE_URL, e.g. gpt-4o-mini or llama3.1; required with it (checked by modelConfigFromEnv).",
    ),
  APPROVAL_TIMEOUT_SECONDS: intVar(10, 7 * 24 * 3600)
    .optional()
    .describe(
      "How long an approval waits for a person when the run does not say (agent.approvals.timeout_seconds) before it expires as a denial (default 86400, a day).",
    ),
  MODEL_REQUEST_TIMEOUT_SECONDS: intVar(1, MAX_MODEL_REQUEST_TIMEOUT_SECONDS)
    .optional()
    .describe(
      "Longest silence of the model server (before its answer, between streamed chunks) before the call is retried or fails; raise it for slow local models (default 60).",
    ),
  LOG_LEVEL: logLevelVar().describe(
    "Log level: fatal, error, warn, info (default), debug, trace or silent.",
  ),
});

export type AgentHostEnv = z.output<typeof agentHostEnvSchema>;
