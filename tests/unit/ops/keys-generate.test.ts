import { execFile } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { runOpsCommand } from "../../../infra/ops/ops-cli.ts";
import { DEFAULT_CAPABILITY_AUDIENCE } from "../../../shared/capability/capability-claims.ts";
import { mintCapability } from "../../../shared/capability/mint-capability.ts";
import { verifyCapability } from "../../../shared/capability/verify-capability.ts";
import { agentHostEnvSchema } from "../../../shared/env/agent-host-env.ts";
import { functionsEnvSchema } from "../../../shared/env/functions-env.ts";
import { parseEnv } from "../../../shared/env/parse-env.ts";
import { captureIo } from "../../support/ops-io.ts";

// `workcell keys generate`: its output, read the way the deployment reads it (a POSIX shell
// sourcing the env file as systemd's EnvironmentFile= would, or the JSON form), is accepted by
// both planes' env schemas, and a capability minted with the private half verifies with the
// public half.

const run = promisify(execFile);
let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "wc-keys-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const functionsRest = {
  DATABASE_URL: "postgres://u:p@db:5432/workcell",
  RUN_QUEUE_URL: "https://sqs.eu-west-1.amazonaws.com/1/runs",
  ATTACHMENTS_BUCKET: "workcell-attachments",
  OIDC_ISSUER: "https://login.example.com/",
  OIDC_AUDIENCE: "workcell",
  OIDC_JWKS_URL: "https://login.example.com/jwks",
  DATA_PLANE_URL: "https://dp.example.com",
};
const agentHostRest = {
  DATABASE_URL: "postgres://u:p@db:5432/workcell",
  DATA_ROOT: "/mnt/workcell",
  NODE_ID: "node-a",
  RUN_QUEUE_URL: "https://sqs.eu-west-1.amazonaws.com/1/runs",
  ATTACHMENTS_BUCKET: "workcell-attachments",
};

async function generate(format: string): Promise<string> {
  const io = captureIo();
  expect(await runOpsCommand(["keys", "generate", "--format", format], io)).toBe(0);
  expect(io.err()).toBe("");
  return io.out();
}

async function mintAndVerify(privateVar: string, publicVar: string) {
  const functionsEnv = parseEnv(functionsEnvSchema, {
    ...functionsRest,
    CAPABILITY_PRIVATE_KEY: privateVar,
  });
  const agentEnv = parseEnv(agentHostEnvSchema, {
    ...agentHostRest,
    CAPABILITY_PUBLIC_KEY: publicVar,
  });
  const { token } = await mintCapability({
    privateKey: functionsEnv.CAPABILITY_PRIVATE_KEY,
    uid: "alice",
    workdirPath: "projects/3f1e6d9c-6f7a-4c1e-9a55-1d2b3c4d5e6f",
    ops: ["read"],
  });
  return verifyCapability(token, {
    publicKey: agentEnv.CAPABILITY_PUBLIC_KEY,
    audience: DEFAULT_CAPABILITY_AUDIENCE,
  });
}

describe("workcell keys generate", () => {
  test("the env form, sourced by a shell, configures both planes and a minted capability verifies", async () => {
    const file = join(dir, "keys.env");
    await writeFile(file, await generate("env"));
    const { stdout } = await run("bash", [
      "-c",
      `set -a; . "$1"; node -e 'console.log(JSON.stringify({p: process.env.CAPABILITY_PRIVATE_KEY, q: process.env.CAPABILITY_PUBLIC_KEY}))'`,
      "bash",
      file,
    ]);
    const { p, q } = JSON.parse(stdout) as { p: string; q: string };
    expect(JSON.parse(q)).not.toHaveProperty("d");
    expect(JSON.parse(p).kid).toBe(JSON.parse(q).kid);
    const verified = await mintAndVerify(p, q);
    expect(verified.ok).toBe(true);
  });

  test("the JSON form does too; two runs give different keys, and one pair's key refuses the other's token", async () => {
    const a = JSON.parse(await generate("json")) as Record<string, string>;
    const b = JSON.parse(await generate("json")) as Record<string, string>;
    expect(Object.keys(a).sort()).toEqual(["CAPABILITY_PRIVATE_KEY", "CAPABILITY_PUBLIC_KEY"]);
    expect(a.CAPABILITY_PRIVATE_KEY).not.toBe(b.CAPABILITY_PRIVATE_KEY);
    expect(
      (await mintAndVerify(a.CAPABILITY_PRIVATE_KEY ?? "", a.CAPABILITY_PUBLIC_KEY ?? "")).ok,
    ).toBe(true);
    const crossed = await mintAndVerify(
      a.CAPABILITY_PRIVATE_KEY ?? "",
      b.CAPABILITY_PUBLIC_KEY ?? "",
    );
    expect(crossed.ok).toBe(false);
  });

  test("the private half is refused where the public key belongs", async () => {
    const a = JSON.parse(await generate("json")) as Record<string, string>;
    expect(() =>
      parseEnv(agentHostEnvSchema, {
        ...agentHostRest,
        CAPABILITY_PUBLIC_KEY: a.CAPABILITY_PRIVATE_KEY,
      }),
    ).toThrow(/CAPABILITY_PUBLIC_KEY: is a private key/);
  });

  test("an unknown format or subcommand is a usage error and prints no key", async () => {
    const io = captureIo();
    expect(await runOpsCommand(["keys", "generate", "--format", "pem"], io)).toBe(2);
    expect(await runOpsCommand(["keys", "rotate"], io)).toBe(2);
    expect(io.out()).toBe("");
  });
});
