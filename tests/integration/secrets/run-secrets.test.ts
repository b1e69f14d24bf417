import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, expect, test } from "vitest";
import type { EgressProxy } from "../../../agent-host/egress/egress-proxy.ts";
import { generateDeploymentCa } from "../../../agent-host/secrets/deployment-ca.ts";
import { prepareNodeSecrets } from "../../../agent-host/secrets/node-secrets.ts";
import { putNetworkOverride } from "../../../shared/network/network-policy-store.ts";
import { createEnvKeyWrapper } from "../../../shared/secrets/secret-envelope.ts";
import { putSecret } from "../../../shared/secrets/secret-store.ts";
import { captureLogs } from "../../support/log-capture.ts";
import { keepPromptAndAnswer, startEgressWorker } from "../egress/support/egress-worker.ts";
import { type RunWorld, runWorld, UID } from "../runs/run-harness.ts";
import { scriptedModels, toolOutputs } from "../runs/scripted-models.ts";

// Secrets wired end to end in the worker (decision 0132), in the process tier: a run of a
// user with network and a secret gets the placeholder (never the value) and the trust
// bundle in its commands' environment, and its prompt names the secret and its hosts; the
// value is in no run event and no log line.

let world: RunWorld;
let proxy: EgressProxy;
const logs = captureLogs("debug");
const prompts = new Map<string, string>();
const VALUE = `ghp_${randomBytes(20).toString("hex")}`;

const PROBE =
  'env | grep "^GITHUB_TOKEN="; test -s "$SSL_CERT_FILE" && grep -c "BEGIN CERTIFICATE" "$SSL_CERT_FILE" >/dev/null && echo bundle-ok; env';

beforeAll(async () => {
  world = await runWorld({}, "process");
  const keys = createEnvKeyWrapper(randomBytes(32));
  const node = prepareNodeSecrets(world.db, {
    keys,
    ca: await generateDeploymentCa("run secrets test CA"),
    runtimeBundle: "",
  });
  await putNetworkOverride(world.db, UID, { mode: "allowlist", allow: ["api.example.com"] });
  await putSecret(world.db, keys, UID, "GITHUB_TOKEN", {
    value: VALUE,
    hosts: ["api.example.com"],
    header: "Authorization",
    template: "Bearer {value}",
  });
  const models = scriptedModels((request) => [
    { toolCalls: [{ name: "bash", arguments: { command: PROBE } }] },
    keepPromptAndAnswer(prompts, request.runId, "done"),
  ]);
  proxy = await startEgressWorker(world, models, { logger: logs.logger, secrets: node });
}, 120_000);

afterAll(async () => {
  await world?.cleanup();
  await proxy?.close();
});

test("a run's commands hold the placeholder and the bundle; its prompt names the secret and hosts; the value is nowhere", async () => {
  const project = await world.project({ uid: UID });
  const thread = await world.thread(project);
  const runId = await world.submit(thread, "probe");
  const run = await world.waitForRun(runId);
  expect(run.status).toBe("succeeded");
  const events = await world.events(runId);
  const output = toolOutputs(events)[0] ?? "";
  expect(output).toMatch(/^GITHUB_TOKEN=wcs_[0-9a-f]{40}\nbundle-ok\n/);
  const prompt = prompts.get(runId) ?? "";
  expect(prompt).toContain("$GITHUB_TOKEN: for api.example.com");
  for (const text of [output, prompt, JSON.stringify(events), logs.raw.join("\n")])
    expect(text).not.toContain(VALUE);
});
