import { randomBytes } from "node:crypto";
import { mkdtemp, writeFile } from "node:fs/promises";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { KMSClient } from "@aws-sdk/client-kms";
import { afterAll, beforeAll, describe, expect, test, vi } from "vitest";
import { generateDeploymentCa } from "../../../agent-host/secrets/deployment-ca.ts";
import { prepareNodeSecrets } from "../../../agent-host/secrets/node-secrets.ts";
import { nodeSecretsFromEnv } from "../../../agent-host/secrets/secrets-material.ts";
import { createKmsKeyWrapper } from "../../../shared/secrets/kms-key-wrapper.ts";
import { createEnvKeyWrapper, type KeyWrapper } from "../../../shared/secrets/secret-envelope.ts";
import { secretKeysFromEnv } from "../../../shared/secrets/secret-keys-from-env.ts";
import { loadLiveSecrets } from "../../../shared/secrets/secret-store.ts";
import { type FakeKms, startFakeKms } from "../../support/fake-kms.ts";
import { captureLogs } from "../../support/log-capture.ts";
import { type ErrorJson, jsonOf } from "./support/functions-harness.ts";
import { functionsHarnessForFile } from "./support/functions-harness-for-file.ts";

// The secrets store sealed by AWS KMS (decisions 0164–0166) through the whole app on real
// PostgreSQL, with the real @aws-sdk/client-kms talking AWS JSON 1.1 to a KMS on loopback
// (tests/support/fake-kms.ts): round trip, the encryption context binding, KMS down or
// refusing (a clear 503, no row, nothing logged), and a store sealed partly by the env key.

const logs = captureLogs("debug");
const envKeyBase64 = randomBytes(32).toString("base64");
const envKeys = createEnvKeyWrapper(Buffer.from(envKeyBase64, "base64"));
const credentials = { accessKeyId: "AKIDTEST", secretAccessKey: "test-secret" };
/** What the app seals with now; tests switch it (a redeploy with other settings). */
let current: KeyWrapper = envKeys;
const switchable: KeyWrapper = {
  get keyId() {
    return current.keyId;
  },
  get openers() {
    return current.openers;
  },
  wrap: (key, context, signal) => current.wrap(key, context, signal),
  unwrap: (wrapped, context, signal) => current.unwrap(wrapped, context, signal),
};
const h = functionsHarnessForFile({ logger: logs.logger, secretKeys: switchable });

let kms: FakeKms;
const ALIAS = "alias/workcell-secrets";
beforeAll(async () => {
  kms = await startFakeKms();
  kms.createKey(ALIAS);
});
afterAll(async () => {
  await kms.close();
});

/** The deployment's keys as the entries build them from env (KMS, optionally the env key too). */
function kmsKeys(extra: { WORKCELL_SECRETS_KEY?: string } = {}): KeyWrapper {
  const keys = secretKeysFromEnv(
    {
      WORKCELL_SECRETS_KMS_KEY_ID: ALIAS,
      WORKCELL_SECRETS_KMS_ENDPOINT: kms.endpoint,
      AWS_REGION: "us-east-1",
      ...extra,
    },
    credentials,
  );
  if (keys === undefined) throw new Error("no keys from env");
  return keys;
}

const stored: string[] = [];
const value = () => {
  const v = `ghp_${randomBytes(18).toString("hex")}`;
  stored.push(v);
  return v;
};
const put = (uid: string, name: string, v: string) =>
  h.call("PUT", `/v1/secrets/${name}`, { uid, body: { value: v, hosts: ["api.github.com"] } });
const tableText = async () => JSON.stringify(await h.database.sql`select * from user_secrets`);
async function openAs(keys: KeyWrapper, uid: string, name: string): Promise<string> {
  const live = await loadLiveSecrets(h.db, keys, uid);
  const secret = live.find((s) => s.name === name);
  if (secret === undefined) throw new Error(`no ${name} of ${uid}`);
  return secret.value();
}
/** Neither a value nor any data key KMS was asked to seal is in the logs. */
function expectNothingLogged() {
  const text = logs.raw.join("\n");
  for (const v of stored) expect(text).not.toContain(v);
  for (const body of kms.bodies) {
    const plaintext = (JSON.parse(body) as { Plaintext?: string }).Plaintext;
    if (plaintext !== undefined) expect(text).not.toContain(plaintext);
  }
}

/** A loopback port nothing listens on, and one that accepts and never answers. */
async function deadEndpoints(): Promise<{ refused: string; silent: string; close(): void }> {
  const listen = async (server: Server) => {
    await new Promise<void>((ready) => server.listen(0, "127.0.0.1", ready));
    return (server.address() as { port: number }).port;
  };
  const gone = createServer();
  const refusedPort = await listen(gone);
  await new Promise<void>((done) => gone.close(() => done()));
  const held: import("node:net").Socket[] = [];
  const silent = createServer((socket) => held.push(socket));
  const silentPort = await listen(silent);
  return {
    refused: `http://127.0.0.1:${refusedPort}`,
    silent: `http://127.0.0.1:${silentPort}`,
    close: () => {
      for (const socket of held) socket.destroy();
      silent.close();
    },
  };
}

describe("secrets sealed by AWS KMS", () => {
  test("round trip: the data key is sealed by KMS under <uid>/<name>; the value never goes to KMS", async () => {
    current = kmsKeys();
    const v = value();
    const before = kms.calls.length;
    expect((await put("alice", "GITHUB_TOKEN", v)).status).toBe(200);
    expect(kms.calls.slice(before)).toEqual(["Encrypt"]);
    const [row] = await h.database.sql<{ key_id: string }[]>`
      select key_id from user_secrets where uid = 'alice' and name = 'GITHUB_TOKEN'`;
    expect(row?.key_id).toBe(`kms:${ALIAS}`);
    const sent = JSON.parse(kms.bodies.at(-1) ?? "{}") as Record<string, unknown>;
    expect(sent.EncryptionContext).toEqual({ "workcell:secret": "alice/GITHUB_TOKEN" });
    expect(kms.bodies.join("\n")).not.toContain(v);
    // The node opens it through the same store (Decrypt), the env key alone cannot.
    expect(await openAs(kmsKeys(), "alice", "GITHUB_TOKEN")).toBe(v);
    await expect(openAs(envKeys, "alice", "GITHUB_TOKEN")).rejects.toThrow(/another key/);
    expect(await tableText()).not.toContain(v);
    expectNothingLogged();
  });

  test("a sealed row moved to another user or name does not open: KMS refuses the context, nothing leaks", async () => {
    current = kmsKeys();
    const v = value();
    expect((await put("carol", "NPM_TOKEN", v)).status).toBe(200);
    await h.database.sql`
      insert into user_secrets (uid, name, hosts, header, template, key_id, wrapped_key, ciphertext)
      select 'mallory', name, hosts, header, template, key_id, wrapped_key, ciphertext
        from user_secrets where uid = 'carol' and name = 'NPM_TOKEN'`;
    await h.database.sql`
      insert into user_secrets (uid, name, hosts, header, template, key_id, wrapped_key, ciphertext)
      select uid, 'OTHER_NAME', hosts, header, template, key_id, wrapped_key, ciphertext
        from user_secrets where uid = 'carol' and name = 'NPM_TOKEN'`;
    for (const [uid, name] of [
      ["mallory", "NPM_TOKEN"],
      ["carol", "OTHER_NAME"],
    ] as const) {
      const error = await openAs(kmsKeys(), uid, name).then(
        () => undefined,
        (e: unknown) => e as Error,
      );
      expect(error?.message).toMatch(/InvalidCiphertextException/);
      expect(error?.message).not.toContain(v);
    }
    expect(await openAs(kmsKeys(), "carol", "NPM_TOKEN")).toBe(v);
    expectNothingLogged();
  });

  test("KMS unreachable (refused, or silent past the deadline): 503 saying nothing was stored, no row, nothing logged", async () => {
    const dead = await deadEndpoints();
    try {
      const unreachable = [
        // The configuration path the entries use, towards a port nothing listens on.
        secretKeysFromEnv(
          { WORKCELL_SECRETS_KMS_KEY_ID: ALIAS, WORKCELL_SECRETS_KMS_ENDPOINT: dead.refused },
          credentials,
        ) as KeyWrapper,
        // A KMS that accepts and never answers: cut by the call's deadline.
        createKmsKeyWrapper({
          client: new KMSClient({ region: "us-east-1", endpoint: dead.silent, credentials }),
          keyId: ALIAS,
          callTimeoutMs: 300,
        }),
      ];
      const before = await tableText();
      for (const keys of unreachable) {
        current = keys;
        const v = value();
        const res = await put("dave", "API_KEY", v);
        expect(res.status).toBe(503);
        const text = await res.text();
        expect(text).not.toContain(v);
        const body = JSON.parse(text) as ErrorJson;
        expect(body.error.code).toBe("unavailable");
        expect(body.error.details).toMatchObject({ reason: "secrets_key_unreachable" });
        expect(body.error.message).toMatch(/could not be reached.*Nothing was stored.*Retry/);
        expect(body.error.details?.kms_error).toMatch(/ECONNREFUSED|TimeoutError|AbortError/);
      }
      expect(await tableText()).toBe(before);
      expectNothingLogged();
    } finally {
      dead.close();
    }
  });

  test("KMS answering AccessDenied: 503 saying the role needs the key, no row; a node's open is refused alike", async () => {
    current = kmsKeys();
    const kept = value();
    expect((await put("erin", "KEPT", kept)).status).toBe(200);
    const before = await tableText();
    kms.denyAll(true);
    try {
      const v = value();
      const res = await put("erin", "DENIED", v);
      expect(res.status).toBe(503);
      const body = await jsonOf<ErrorJson>(res);
      expect(body.error.details).toMatchObject({
        reason: "secrets_key_refused",
        kms_error: "AccessDeniedException",
      });
      expect(body.error.message).toMatch(/kms:Encrypt.*Nothing was stored/);
      expect(await tableText()).toBe(before);
      await expect(openAs(kmsKeys(), "erin", "KEPT")).rejects.toMatchObject({
        code: "unavailable",
        details: { reason: "secrets_key_refused" },
      });
    } finally {
      kms.denyAll(false);
    }
    expect(await openAs(kmsKeys(), "erin", "KEPT")).toBe(kept);
    expectNothingLogged();
  });

  test("switching from the env key to KMS: old rows keep opening while the env key is set, new and replaced ones are KMS's", async () => {
    current = envKeys;
    const old = value();
    expect((await put("frank", "OLD_TOKEN", old)).status).toBe(200);
    const [sealedByEnv] = await h.database.sql<{ key_id: string }[]>`
      select key_id from user_secrets where uid = 'frank'`;
    expect(sealedByEnv?.key_id).toBe(envKeys.keyId);

    current = kmsKeys({ WORKCELL_SECRETS_KEY: envKeyBase64 });
    expect(current.keyId).toBe(`kms:${ALIAS}`);
    expect(await openAs(current, "frank", "OLD_TOKEN")).toBe(old);
    // Without the env key, the old row is refused by name, never tried against KMS.
    const calls = kms.calls.length;
    await expect(openAs(kmsKeys(), "frank", "OLD_TOKEN")).rejects.toThrow(/another key \(env:/);
    expect(kms.calls.length).toBe(calls);

    const fresh = value();
    expect((await put("frank", "NEW_TOKEN", fresh)).status).toBe(200);
    const replaced = value();
    expect((await put("frank", "OLD_TOKEN", replaced)).status).toBe(200);
    const rows = await h.database.sql<{ name: string; key_id: string }[]>`
      select name, key_id from user_secrets where uid = 'frank' order by name`;
    expect(rows.map((r) => [r.name, r.key_id])).toEqual([
      ["NEW_TOKEN", `kms:${ALIAS}`],
      ["OLD_TOKEN", `kms:${ALIAS}`],
    ]);
    expect(await openAs(kmsKeys(), "frank", "OLD_TOKEN")).toBe(replaced);
    expect(await openAs(kmsKeys(), "frank", "NEW_TOKEN")).toBe(fresh);
    expectNothingLogged();
  });

  test("a node configured from its env with the KMS key opens what the API sealed; a call gives up on the caller's signal", async () => {
    current = kmsKeys();
    const v = value();
    expect((await put("grace", "DEPLOY_TOKEN", v)).status).toBe(200);
    // A node has no credentials in its settings: the SDK's default chain (env, instance role).
    vi.stubEnv("AWS_ACCESS_KEY_ID", credentials.accessKeyId);
    vi.stubEnv("AWS_SECRET_ACCESS_KEY", credentials.secretAccessKey);
    const dir = await mkdtemp(join(tmpdir(), "kms-node-"));
    const ca = await generateDeploymentCa();
    await writeFile(join(dir, "ca-cert.pem"), ca.certPem);
    await writeFile(join(dir, "ca-key.pem"), ca.keyPem, { mode: 0o600 });
    const config = await nodeSecretsFromEnv(
      {
        WORKCELL_SECRETS_KMS_KEY_ID: ALIAS,
        WORKCELL_SECRETS_KMS_ENDPOINT: kms.endpoint,
        AWS_REGION: "us-east-1",
        WORKCELL_SECRETS_CA_CERT: join(dir, "ca-cert.pem"),
        WORKCELL_SECRETS_CA_KEY: join(dir, "ca-key.pem"),
        RUNTIME_ASSETS_DIR: dir,
      },
      logs.logger,
    );
    if (config === undefined) throw new Error("the node did not take its secrets settings");
    expect(config.keys.keyId).toBe(`kms:${ALIAS}`);
    const node = prepareNodeSecrets(h.db, config);
    const live = await node.source("grace", AbortSignal.timeout(10_000));
    const secret = live.find((s) => s.name === "DEPLOY_TOKEN");
    expect(await secret?.value(AbortSignal.timeout(10_000))).toBe(v);

    // A KMS that never answers, with a long deadline: the caller's signal ends the call.
    const dead = await deadEndpoints();
    try {
      const hung = createKmsKeyWrapper({
        client: new KMSClient({ region: "us-east-1", endpoint: dead.silent, credentials }),
        keyId: ALIAS,
        callTimeoutMs: 600_000,
      });
      await expect(
        hung.unwrap("AAAA", "grace/DEPLOY_TOKEN", AbortSignal.abort()),
      ).rejects.toMatchObject({ details: { reason: "secrets_key_unreachable" } });
    } finally {
      dead.close();
      vi.unstubAllEnvs();
    }
    expectNothingLogged();
  });
});
