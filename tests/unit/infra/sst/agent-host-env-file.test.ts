import { execFileSync } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { modelConfigFromEnv } from "../../../../agent-host/runs/execute/model-client-factory.ts";
import {
  type AgentHostEnvValues,
  capabilityPublicJwk,
  renderAgentHostEnv,
} from "../../../../infra/sst/agent-host-env-file.ts";
import { agentHostEnvSchema } from "../../../../shared/env/agent-host-env.ts";
import { parseEnv } from "../../../../shared/env/parse-env.ts";
import { newKeyPair } from "../../capability/capability-keys.ts";

// The env file every node gets from the SSM parameter the deploy writes: what the
// agent-host parses with its own schema, and never the capability private key.

/** The file as a shell reads it (`set -a; . file`), which takes single quotes literally as systemd does. */
function sourced(text: string): Record<string, string> {
  const file = join(mkdtempSync(join(tmpdir(), "env-file-")), "agent-host.env");
  writeFileSync(file, text);
  const out = execFileSync("env", [
    "-i",
    "bash",
    "--norc",
    "--noprofile",
    "-c",
    'set -a; . "$1"; env -0',
    "_",
    file,
  ]);
  return Object.fromEntries(
    out
      .toString("utf8")
      .split("\0")
      .filter((entry) => entry.includes("="))
      .map((entry) => [entry.slice(0, entry.indexOf("=")), entry.slice(entry.indexOf("=") + 1)]),
  );
}

async function values(): Promise<AgentHostEnvValues> {
  const { privateJwk } = await newKeyPair();
  return {
    DATABASE_URL: "postgres://workcell:p4ss-w0rd@db.internal:5432/workcell",
    DATA_ROOT: "/srv/workcell",
    RUN_QUEUE_URL: "https://sqs.eu-west-1.amazonaws.com/123456789012/runs",
    RUN_DLQ_URL: "https://sqs.eu-west-1.amazonaws.com/123456789012/runs-dlq",
    ATTACHMENTS_BUCKET: "workcell-attachments",
    AWS_REGION: "eu-west-1",
    CAPABILITY_PUBLIC_KEY: capabilityPublicJwk(JSON.stringify(privateJwk)),
    DATA_PLANE_PORT: "8081",
    DATA_PLANE_PUBLIC_URL: "https://dp.workcell.example.com",
    DATA_PLANE_CORS_ORIGINS: "https://console.example.com",
  };
}

describe("agent-host env file", () => {
  test("parses with the agent-host's own schema once the node appends its NODE_ID", async () => {
    const text = `${renderAgentHostEnv(await values())}NODE_ID=i-0123456789abcdef0\n`;
    const env = parseEnv(agentHostEnvSchema, sourced(text));
    expect(env.NODE_ID).toBe("i-0123456789abcdef0");
    expect(env.DATA_PLANE_PORT).toBe(8081);
    expect(env.CAPABILITY_PUBLIC_KEY).toMatchObject({ kty: "OKP", crv: "Ed25519" });
  });

  test("with a model server, the node runs it (with its token); without, the shell model", async () => {
    const base = await values();
    const withModel = renderAgentHostEnv({
      ...base,
      MODEL_BASE_URL: "https://api.openai.com/v1",
      MODEL_NAME: "gpt-4o-mini",
      MODEL_API_KEY: "sk-test-123",
    });
    const env = parseEnv(agentHostEnvSchema, sourced(`${withModel}NODE_ID=i-0abc12345\n`));
    expect(modelConfigFromEnv(env)).toMatchObject({
      kind: "openai-compatible",
      baseUrl: "https://api.openai.com/v1",
      model: "gpt-4o-mini",
      apiKey: "sk-test-123",
    });
    const without = renderAgentHostEnv({
      ...base,
      MODEL_BASE_URL: undefined,
      MODEL_API_KEY: undefined,
    });
    expect(without).not.toContain("MODEL_");
    const plain = parseEnv(agentHostEnvSchema, sourced(`${without}NODE_ID=i-0abc12345\n`));
    expect(modelConfigFromEnv(plain)).toMatchObject({ kind: "shell" });
  });

  test("the nodes get the public half only; a public or malformed key is refused unquoted", async () => {
    const { privateJwk, publicJwk } = await newKeyPair();
    const derived = JSON.parse(capabilityPublicJwk(JSON.stringify(privateJwk)));
    expect(derived).toEqual(publicJwk);
    expect(derived).not.toHaveProperty("d");
    expect(() => capabilityPublicJwk(JSON.stringify(publicJwk))).toThrow(/CAPABILITY_PRIVATE_KEY/);
    let message = "";
    try {
      capabilityPublicJwk(`{"d":"${privateJwk.d}"`);
    } catch (e) {
      message = (e as Error).message;
    }
    expect(message).toMatch(/must be a JSON object/);
    expect(message).not.toContain(privateJwk.d);
  });

  test("a value with a quote or line break is refused by name, without the value", async () => {
    const good = await values();
    for (const bad of ["p'ss", "p\nss"]) {
      const url = `postgres://workcell:${bad}@db:5432/workcell`;
      let message = "";
      try {
        renderAgentHostEnv({ ...good, DATABASE_URL: url });
      } catch (e) {
        message = (e as Error).message;
      }
      expect(message).toBe("agent-host env: DATABASE_URL contains a quote or a line break");
    }
  });
});
