import { readFile } from "node:fs/promises";
import { parseArgs } from "node:util";
import Docker from "dockerode";
import { resolveSandboxImage } from "../../../agent-host/runtime/sandbox-image.ts";
import { createAwsClients } from "../../../shared/aws/create-aws-clients.ts";
import {
  agentHostEnvSchema,
  DEFAULT_RUNTIME_ASSETS_DIR,
} from "../../../shared/env/agent-host-env.ts";
import { EnvError } from "../../../shared/env/env-error.ts";
import { parseEnv } from "../../../shared/env/parse-env.ts";
import type { OpsIo } from "../ops-io.ts";
import { type DoctorResult, fail, formatResult, skip } from "./doctor-check.ts";
import { filesystemChecks } from "./filesystem-checks.ts";
import { runtimeAssetsCheck } from "./runtime-assets-check.ts";
import { dockerChecks, processTierCheck } from "./sandbox-checks.ts";
import { postgresChecks, s3Check, sqsCheck } from "./service-checks.ts";

/**
 * `workcell doctor` on a node: one line per part (sandbox tiers, sandbox image, the data
 * root's semantics, Postgres, SQS, S3, clock), each ok / WARN / FAIL / skip with what to do.
 * Exit 0 when nothing failed, 1 otherwise. Reads the agent-host env (shared/env/
 * agent-host-env.ts) from the process or from --env-file (e.g. /etc/workcell/agent-host.env).
 */
export async function doctorCommand(argv: readonly string[], io: OpsIo): Promise<number> {
  const { values } = parseArgs({
    args: [...argv],
    options: { "env-file": { type: "string" } },
    strict: true,
  });
  const raw =
    values["env-file"] === undefined
      ? io.env
      : { ...io.env, ...(await readEnvFile(values["env-file"])) };
  const results: DoctorResult[] = [];
  const print = (r: DoctorResult) => {
    results.push(r);
    io.stdout(`${formatResult(r)}\n`);
  };

  const env = readEnv(raw, print);
  if (env.DATA_ROOT === undefined) print(skip("data root", "DATA_ROOT is not usable"));
  else for (const r of await filesystemChecks(env.DATA_ROOT)) print(r);

  const docker = new Docker();
  const runtimeDir = env.RUNTIME_ASSETS_DIR ?? DEFAULT_RUNTIME_ASSETS_DIR;
  const image = await resolveSandboxImage({ configured: env.SANDBOX_IMAGE, runtimeDir });
  const container = await dockerChecks(docker, image);
  for (const r of container) print(r);
  const processTier = await processTierCheck();
  print(processTier);
  if (container[0]?.verdict !== "ok" && processTier.verdict !== "ok") {
    print(fail("sandbox tier", "no isolation tier is ready: this node would refuse every run"));
  }
  print(await runtimeAssetsCheck(runtimeDir));

  if (env.DATABASE_URL === undefined) print(skip("postgres", "DATABASE_URL is not usable"));
  else for (const r of await postgresChecks(env.DATABASE_URL)) print(r);

  const aws = createAwsClients({
    ...(env.AWS_REGION === undefined ? {} : { AWS_REGION: env.AWS_REGION }),
    ...(env.AWS_ENDPOINT_URL === undefined ? {} : { AWS_ENDPOINT_URL: env.AWS_ENDPOINT_URL }),
  });
  if (env.RUN_QUEUE_URL === undefined) print(skip("sqs run queue", "RUN_QUEUE_URL is not usable"));
  else print(await sqsCheck(aws.sqs, env.RUN_QUEUE_URL));
  if (env.ATTACHMENTS_BUCKET === undefined)
    print(skip("s3 attachments bucket", "ATTACHMENTS_BUCKET is not usable"));
  else print(await s3Check(aws.s3, env.ATTACHMENTS_BUCKET));

  const failed = results.filter((r) => r.verdict === "fail").map((r) => r.name);
  io.stdout(
    failed.length === 0
      ? "doctor: this node can run Workcell\n"
      : `doctor: ${failed.length} part(s) failed: ${failed.join(", ")}\n`,
  );
  return failed.length === 0 ? 0 : 1;
}

type DoctorEnv = Partial<{
  DATA_ROOT: string;
  SANDBOX_IMAGE: string;
  RUNTIME_ASSETS_DIR: string;
  DATABASE_URL: string;
  RUN_QUEUE_URL: string;
  ATTACHMENTS_BUCKET: string;
  AWS_REGION: string;
  AWS_ENDPOINT_URL: string;
}>;

// The whole schema first (one line naming every bad variable, as the daemon would refuse
// to start), then each variable on its own so the parts that can be checked still are.
function readEnv(
  raw: Readonly<Record<string, unknown>>,
  print: (r: DoctorResult) => void,
): DoctorEnv {
  try {
    parseEnv(agentHostEnvSchema, raw);
  } catch (error) {
    if (!(error instanceof EnvError)) throw error;
    print(fail("environment", error.problems.map((p) => `${p.variable} ${p.message}`).join(" | ")));
  }
  const out: Record<string, string> = {};
  const names = [
    "DATA_ROOT",
    "SANDBOX_IMAGE",
    "RUNTIME_ASSETS_DIR",
    "DATABASE_URL",
    "RUN_QUEUE_URL",
    "ATTACHMENTS_BUCKET",
    "AWS_REGION",
    "AWS_ENDPOINT_URL",
  ] as const;
  for (const name of names) {
    const value = raw[name];
    if (value === undefined || value === "") continue;
    const parsed = agentHostEnvSchema.shape[name].safeParse(value);
    if (parsed.success && typeof parsed.data === "string") out[name] = parsed.data;
  }
  return out;
}

/** KEY=VALUE lines as systemd's EnvironmentFile= reads them: comments, optional quotes. */
async function readEnvFile(path: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const line of (await readFile(path, "utf8")).split("\n")) {
    const match = /^\s*([A-Za-z_][A-Za-z0-9_]*)=(.*)$/.exec(line);
    if (!match?.[1] || line.trimStart().startsWith("#")) continue;
    let value = (match[2] ?? "").trim();
    const quoted = /^'(.*)'$/.exec(value) ?? /^"(.*)"$/.exec(value);
    if (quoted) value = quoted[1] ?? "";
    out[match[1]] = value;
  }
  return out;
}
