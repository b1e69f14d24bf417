import { generateKeyPairSync } from "node:crypto";
import { describe, expect, test } from "vitest";
import {
  agentHostEnvSchema,
  DEFAULT_AWS_EMULATOR_PORT,
  DEFAULT_CONSOLE_DIR,
  DEFAULT_DATA_PLANE_PORT,
  DEFAULT_DOCKER_CALL_TIMEOUT_SECONDS,
  DEFAULT_LOCAL_DATA_DIR,
  DEFAULT_LOCAL_PORT,
  DEFAULT_METRICS_HOST,
  DEFAULT_METRICS_PORT,
  DEFAULT_RUNTIME_ASSETS_DIR,
  DEFAULT_SANDBOX_KEEP_WARM_SECONDS,
  DEFAULT_SANDBOX_PROCESS_POOL_SIZE,
  DEFAULT_SANDBOX_STATE_DIR,
  EnvError,
  functionsEnvSchema,
  localEnvSchema,
  MIN_DEV_JWT_SECRET_CHARS,
  parseEnv,
} from "../../../shared/env/index.ts";
import { toErrorBody, WorkcellError } from "../../../shared/errors/index.ts";
import { describedFields } from "./schema-walk.ts";

const { privateKey, publicKey } = generateKeyPairSync("ed25519");
const PRIVATE_JWK = JSON.stringify(privateKey.export({ format: "jwk" }));
const PUBLIC_JWK = JSON.stringify(publicKey.export({ format: "jwk" }));
const DEV_SECRET = "s".repeat(MIN_DEV_JWT_SECRET_CHARS);

const functionsBase = {
  DATABASE_URL: "postgres://wc:pw@db:5432/workcell",
  RUN_QUEUE_URL: "https://sqs.eu-west-1.amazonaws.com/123/runs",
  ATTACHMENTS_BUCKET: "workcell-attachments",
  CAPABILITY_PRIVATE_KEY: PRIVATE_JWK,
  DATA_PLANE_URL: "https://dp.example.com",
};
const oidc = {
  OIDC_ISSUER: "https://login.example.com/",
  OIDC_AUDIENCE: "workcell-api",
  OIDC_JWKS_URL: "https://login.example.com/.well-known/jwks.json",
};

const agentHostBase = {
  DATABASE_URL: "postgresql://wc@db/workcell",
  DATA_ROOT: "/srv/workcell",
  NODE_ID: "node-1",
  RUN_QUEUE_URL: "http://localhost:9324/queue/runs",
  ATTACHMENTS_BUCKET: "workcell-attachments",
  CAPABILITY_PUBLIC_KEY: PUBLIC_JWK,
};

function envError(run: () => unknown): EnvError {
  try {
    run();
  } catch (err) {
    if (err instanceof EnvError) return err;
    throw err;
  }
  throw new Error("expected an EnvError");
}

describe("functionsEnvSchema", () => {
  test("oidc mode (the default) parses and narrows", () => {
    const env = parseEnv(functionsEnvSchema, { ...functionsBase, ...oidc, PATH: "/usr/bin" });
    expect(env.AUTH_MODE).toBe("oidc");
    if (env.AUTH_MODE === "oidc") expect(env.OIDC_JWKS_URL).toBe(oidc.OIDC_JWKS_URL);
    expect(env.CAPABILITY_PRIVATE_KEY).toMatchObject({ kty: "OKP", crv: "Ed25519" });
    expect(env.CAPABILITY_PRIVATE_KEY.d).toEqual(expect.any(String));
    expect(env.LOG_LEVEL).toBe("info");
    expect(env).not.toHaveProperty("PATH");
  });

  test("dev mode needs only DEV_JWT_SECRET", () => {
    const env = parseEnv(functionsEnvSchema, {
      ...functionsBase,
      AUTH_MODE: "dev",
      DEV_JWT_SECRET: DEV_SECRET,
    });
    expect(env.AUTH_MODE).toBe("dev");
    if (env.AUTH_MODE === "dev") expect(env.DEV_JWT_SECRET).toBe(DEV_SECRET);
  });

  test("oidc mode requires every OIDC variable", () => {
    const err = envError(() =>
      parseEnv(functionsEnvSchema, { ...functionsBase, OIDC_ISSUER: oidc.OIDC_ISSUER }),
    );
    expect(err.problems.map((p) => p.variable)).toEqual(["OIDC_AUDIENCE", "OIDC_JWKS_URL"]);
    expect(err.message).toContain("OIDC_AUDIENCE: is required when AUTH_MODE=oidc");
  });

  test("dev mode requires a long enough secret", () => {
    const missing = envError(() =>
      parseEnv(functionsEnvSchema, { ...functionsBase, AUTH_MODE: "dev" }),
    );
    expect(missing.problems).toEqual([
      {
        variable: "DEV_JWT_SECRET",
        message: expect.stringContaining("is required when AUTH_MODE=dev"),
      },
    ]);
    const short = envError(() =>
      parseEnv(functionsEnvSchema, {
        ...functionsBase,
        AUTH_MODE: "dev",
        DEV_JWT_SECRET: "hunter2",
      }),
    );
    expect(short.problems[0]?.message).toContain(`at least ${MIN_DEV_JWT_SECRET_CHARS} characters`);
    expect(short.message).not.toContain("hunter2");
  });

  test("one error lists every bad variable, with how to fix it, and never the values", () => {
    const err = envError(() =>
      parseEnv(functionsEnvSchema, {
        DATABASE_URL: "mysql://secret-password@db/x",
        RUN_QUEUE_URL: "",
        ATTACHMENTS_BUCKET: "Bad_Bucket",
        AUTH_MODE: "magic",
        CAPABILITY_PRIVATE_KEY: "{not json secret-key-material",
        DATA_PLANE_URL: "ftp://dp",
      }),
    );
    expect(err).toBeInstanceOf(WorkcellError);
    expect(err.name).toBe("EnvError");
    expect(err.problems.map((p) => p.variable).sort()).toEqual(
      [
        "ATTACHMENTS_BUCKET",
        "AUTH_MODE",
        "CAPABILITY_PRIVATE_KEY",
        "DATABASE_URL",
        "DATA_PLANE_URL",
        "RUN_QUEUE_URL",
      ].sort(),
    );
    expect(err.message).toContain("RUN_QUEUE_URL: is not set.");
    expect(err.message).toContain("DATABASE_URL: must be a postgres:// or postgresql:// URL");
    expect(err.message).toContain("Expected: ");
    expect(err.message).not.toContain("secret-password");
    expect(err.message).not.toContain("secret-key-material");
    expect(err.details).toEqual({ variables: err.problems.map((p) => p.variable) });
    // Reaching a client, it is a plain internal error.
    expect(toErrorBody(err).error.code).toBe("internal");
    expect(JSON.stringify(toErrorBody(err))).not.toContain("DATABASE_URL");
  });

  test("rejects a JWK that is not an Ed25519 private key", () => {
    const rsa = JSON.stringify({ kty: "RSA", n: "x", e: "AQAB", d: "y" });
    for (const key of [PUBLIC_JWK, rsa, "[]", "null"]) {
      const err = envError(() =>
        parseEnv(functionsEnvSchema, { ...functionsBase, ...oidc, CAPABILITY_PRIVATE_KEY: key }),
      );
      expect(err.problems.map((p) => p.variable)).toEqual(["CAPABILITY_PRIVATE_KEY"]);
    }
  });
});

describe("agentHostEnvSchema", () => {
  test("parses with defaults and numbers", () => {
    const env = parseEnv(agentHostEnvSchema, {
      ...agentHostBase,
      SANDBOX_CPUS: "0.5",
      WORKER_CONCURRENCY: "8",
    });
    expect(env.DATA_PLANE_PORT).toBe(DEFAULT_DATA_PLANE_PORT);
    // Unset: the entry takes the Runtime Assets' own image (agent-host/runtime/sandbox-image.ts).
    expect(env.SANDBOX_IMAGE).toBeUndefined();
    expect(env.SANDBOX_NETWORK).toBe("none");
    expect(env.SANDBOX_CPUS).toBe(0.5);
    expect(env.WORKER_CONCURRENCY).toBe(8);
    expect(env.CAPABILITY_PUBLIC_KEY).toMatchObject({ kty: "OKP", crv: "Ed25519" });
  });

  test("SANDBOX_CPUS unset: the entry takes the node's share (nodeShareNanoCpus)", () => {
    expect(parseEnv(agentHostEnvSchema, agentHostBase).SANDBOX_CPUS).toBeUndefined();
  });

  test("an empty variable counts as unset (default applies)", () => {
    const env = parseEnv(agentHostEnvSchema, { ...agentHostBase, DATA_PLANE_PORT: "" });
    expect(env.DATA_PLANE_PORT).toBe(DEFAULT_DATA_PLANE_PORT);
  });

  test("refuses a private key where the public key belongs", () => {
    const err = envError(() =>
      parseEnv(agentHostEnvSchema, { ...agentHostBase, CAPABILITY_PUBLIC_KEY: PRIVATE_JWK }),
    );
    expect(err.problems[0]?.variable).toBe("CAPABILITY_PUBLIC_KEY");
    expect(err.problems[0]?.message).toContain("private key");
  });

  test("model settings are optional; a bad base URL is refused without quoting the key", () => {
    expect(parseEnv(agentHostEnvSchema, agentHostBase).MODEL_BASE_URL).toBeUndefined();
    const llm = parseEnv(agentHostEnvSchema, {
      ...agentHostBase,
      MODEL_BASE_URL: "http://127.0.0.1:11434/v1",
      MODEL_NAME: "llama3.1",
      MODEL_API_KEY: "sk-secret-model-key",
    });
    expect(llm).toMatchObject({ MODEL_NAME: "llama3.1", MODEL_API_KEY: "sk-secret-model-key" });
    const badUrl = envError(() =>
      parseEnv(agentHostEnvSchema, {
        ...agentHostBase,
        MODEL_BASE_URL: "ftp://m",
        MODEL_API_KEY: "sk-secret-model-key",
      }),
    );
    expect(badUrl.problems.map((p) => p.variable)).toEqual(["MODEL_BASE_URL"]);
    expect(badUrl.message).not.toContain("sk-secret-model-key");
  });

  test.each([
    ["DATA_ROOT", "relative/dir"],
    ["NODE_ID", "node 1"],
    ["NODE_ID", "-node"],
    ["DATA_PLANE_PORT", "0"],
    ["DATA_PLANE_PORT", "65536"],
    ["DATA_PLANE_PORT", "80.5"],
    ["WORKER_CONCURRENCY", "1e3"],
    ["WORKER_CONCURRENCY", "0x10"],
    ["WORKER_CONCURRENCY", " 4"],
    ["SANDBOX_MEMORY_MB", "1"],
    ["SANDBOX_CPUS", "0.01"],
    ["SANDBOX_PIDS_LIMIT", "-5"],
    ["DOCKER_CALL_TIMEOUT_SECONDS", "0"],
    ["MODEL_REQUEST_TIMEOUT_SECONDS", "1.5"],
    ["WORKDIR_SUBVOLUMES", "yes"],
  ])("rejects %s=%j", (variable, value) => {
    const err = envError(() =>
      parseEnv(agentHostEnvSchema, { ...agentHostBase, [variable]: value }),
    );
    expect(err.problems.map((p) => p.variable)).toEqual([variable]);
  });
});

describe("localEnvSchema", () => {
  test("works with an empty environment", () => {
    expect(parseEnv(localEnvSchema, {})).toEqual({
      PORT: DEFAULT_LOCAL_PORT,
      DATA_DIR: DEFAULT_LOCAL_DATA_DIR,
      AWS_EMULATOR_PORT: DEFAULT_AWS_EMULATOR_PORT,
      DATA_PLANE_PORT: DEFAULT_DATA_PLANE_PORT,
      RUNTIME_ASSETS_DIR: DEFAULT_RUNTIME_ASSETS_DIR,
      SANDBOX_STATE_DIR: DEFAULT_SANDBOX_STATE_DIR,
      CONSOLE_DIR: DEFAULT_CONSOLE_DIR,
      SANDBOX_KEEP_WARM_SECONDS: DEFAULT_SANDBOX_KEEP_WARM_SECONDS,
      SANDBOX_PROCESS_POOL_SIZE: DEFAULT_SANDBOX_PROCESS_POOL_SIZE,
      WORKDIR_SUBVOLUMES: "auto",
      DOCKER_CALL_TIMEOUT_SECONDS: DEFAULT_DOCKER_CALL_TIMEOUT_SECONDS,
      METRICS_PORT: DEFAULT_METRICS_PORT,
      METRICS_HOST: DEFAULT_METRICS_HOST,
      LOG_LEVEL: "info",
    });
  });

  test("takes overrides and rejects bad values", () => {
    expect(
      parseEnv(localEnvSchema, { PORT: "3000", LOG_LEVEL: "debug", WORKDIR_SUBVOLUMES: "off" }),
    ).toMatchObject({
      PORT: 3000,
      LOG_LEVEL: "debug",
      WORKDIR_SUBVOLUMES: "off",
    });
    const err = envError(() => parseEnv(localEnvSchema, { PORT: "http", LOG_LEVEL: "loud" }));
    expect(err.problems.map((p) => p.variable)).toEqual(["PORT", "LOG_LEVEL"]);
  });
});

describe("env schemas", () => {
  test("every variable is described", () => {
    for (const [name, schema] of Object.entries({
      functionsEnvSchema,
      agentHostEnvSchema,
      localEnvSchema,
    })) {
      const fields = describedFields(schema);
      expect(fields.length, name).toBeGreaterThan(3);
      expect(fields.filter((f) => !f.described).map((f) => `${name}.${f.path}`)).toEqual([]);
    }
  });
});
