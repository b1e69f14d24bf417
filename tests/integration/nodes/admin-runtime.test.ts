import { randomBytes } from "node:crypto";
import { readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { eq } from "drizzle-orm";
import { generateKeyPair } from "jose";
import { afterAll, beforeAll, expect, it } from "vitest";
import { type AgentHost, startAgentHost } from "../../../agent-host/agent-host.ts";
import { recordNodeRuntime } from "../../../agent-host/record-node-runtime.ts";
import { modelConfigSchema } from "../../../agent-host/runs/agent/model-config.ts";
import { LABEL } from "../../../agent-host/sandbox/container-labels.ts";
import { detectSandboxTiers } from "../../../agent-host/sandbox/detect-sandbox-tiers.ts";
import { detectCgroups } from "../../../agent-host/sandbox/process/sandbox-cgroups.ts";
import type { AdminNodeRuntime } from "../../../shared/contracts/node-runtime.ts";
import { nodes } from "../../../shared/db/schema/nodes.ts";
import { DEFAULT_RUNTIME_ASSETS_DIR } from "../../../shared/env/agent-host-env.ts";
import { freePort } from "../../setup/free-port.ts";
import { freshBucket, s3Client } from "../../support/aws.ts";
import { removeContainersLabelled, requireDocker } from "../../support/docker.ts";
import {
  type FunctionsHarness,
  jsonOf,
  startFunctionsHarness,
} from "../functions/support/functions-harness.ts";
import { silentLogger, testConfig, uniqueNodeId } from "../sandbox/sandbox-fixture.ts";

// GET /v1/admin/runtime (API.md "Nodes and runtimes", issue 20 (5)): a real agent-host
// with both tiers and the real Runtime Assets writes its report into its node row; the
// control plane serves it to admins only.

const treeDir = process.env.RUNTIME_ASSETS_DIR ?? DEFAULT_RUNTIME_ASSETS_DIR;
const { docker, image } = requireDocker();
let h: FunctionsHarness;
let host: AgentHost | undefined;
let nodeId: string;
const stateDir = join(tmpdir(), `workcell-test-runtime-${randomBytes(6).toString("hex")}`);

beforeAll(async () => {
  await readFile(join(treeDir, "../manifest.json")).catch(() => {
    throw new Error(
      `the Runtime Assets are not built at ${treeDir}: run scripts/ensure-system.sh (infra/runtime-assets/build-runtime-assets.sh)`,
    );
  });
  h = await startFunctionsHarness({ dbMax: 20 });
  nodeId = uniqueNodeId();
  const { publicKey } = await generateKeyPair("EdDSA", { crv: "Ed25519", extractable: true });
  const s3 = s3Client();
  const config = testConfig(image);
  host = await startAgentHost({
    db: h.db,
    sqs: h.sqs,
    runQueueUrl: h.queueUrl,
    s3,
    attachmentsBucket: await freshBucket(s3),
    dataRoot: h.dataRoot,
    nodeId,
    capabilityPublicKeys: [publicKey],
    sandboxTiers: await detectSandboxTiers({
      logger: silentLogger,
      dataRoot: h.dataRoot,
      config,
      runtimeDir: treeDir,
      docker,
      process: { stateDir, cgroupParent: `workcell-test/${nodeId}` },
    }),
    sandboxConfig: config,
    modelConfig: modelConfigSchema.parse({ kind: "shell" }),
    dataPlane: { port: await freePort(), hostname: "127.0.0.1" },
    nodeHeartbeatIntervalMs: 200,
    logger: silentLogger,
  });
}, 300_000);
afterAll(async () => {
  await host?.stop();
  await removeContainersLabelled(docker, LABEL.nodeId, nodeId);
  await rm(stateDir, { recursive: true, force: true });
  const cgroups = await detectCgroups(`workcell-test/${nodeId}`);
  if (cgroups.ok) await cgroups.cgroups.removeParent().catch(() => {});
  await h?.close();
});

async function runtimes(): Promise<AdminNodeRuntime[]> {
  const res = await h.call("GET", "/v1/admin/runtime", { admin: true });
  expect(res.status).toBe(200);
  return (await jsonOf<{ items: AdminNodeRuntime[] }>(res)).items;
}

async function reportOf(id: string, ok: (r: AdminNodeRuntime) => boolean) {
  const deadline = performance.now() + 240_000;
  for (;;) {
    const report = (await runtimes()).find((r) => r.node_id === id);
    if (report !== undefined && ok(report)) return report;
    if (performance.now() > deadline)
      throw new Error(`timed out; last report ${JSON.stringify(report)}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

it("serves each node's tiers and verified Runtime Assets to an admin", async () => {
  const report = await reportOf(nodeId, (r) => r.runtime_assets.state === "verified");
  expect(report.state).toBe("active");
  expect(report.sandbox_tiers).toEqual([
    { tier: "container", ready: true, detail: expect.any(String) },
    { tier: "process", ready: true, detail: expect.any(String) },
  ]);
  const manifest = JSON.parse(await readFile(join(treeDir, "../manifest.json"), "utf8")) as {
    version: string;
    packages: Record<string, string>;
  };
  expect(report.runtime_assets.version).toBe(manifest.version);
  expect(report.runtime_assets.assets.filter((a) => !a.ready)).toEqual([]);
  for (const name of ["bash", "python3", "node", "git"]) {
    expect(report.runtime_assets.assets.find((a) => a.name === name)).toMatchObject({
      ready: true,
      version: expect.stringMatching(/./),
    });
  }
  expect(report.runtime_assets.assets.find((a) => a.name === "bash")?.version).toBe(
    manifest.packages.bash,
  );
}, 300_000);

it("refuses a non-admin (403) and an anonymous caller (401) without revealing any node", async () => {
  const res = await h.call("GET", "/v1/admin/runtime");
  expect(res.status).toBe(403);
  const body = await res.text();
  expect(JSON.parse(body)).toMatchObject({ error: { code: "forbidden" } });
  expect(body).not.toContain(nodeId);
  const anonymous = await h.call("GET", "/v1/admin/runtime", { uid: null });
  expect(anonymous.status).toBe(401);
  expect(await anonymous.text()).not.toContain(nodeId);
});

it("reports a node still verifying, one that never reported, and one whose tier stopped answering", async () => {
  const insert = (id: string) =>
    h.db.insert(nodes).values({ nodeId: id, dataPlaneUrl: "http://127.0.0.1:1" });
  const verifying = uniqueNodeId();
  const silent = uniqueNodeId();
  await insert(verifying);
  await insert(silent);
  const signal = AbortSignal.timeout(10_000);
  await recordNodeRuntime(
    h.db,
    verifying,
    {
      tiers: [
        { tier: "container", ready: true, detail: "docker 20.10" },
        { tier: "process", ready: false, detail: "bwrap is not on PATH" },
      ],
    },
    signal,
  );
  // The heartbeat no longer finds the container tier answering (Docker went away).
  await h.db.update(nodes).set({ sandboxTiers: [] }).where(eq(nodes.nodeId, verifying));

  const items = await runtimes();
  expect(items.find((r) => r.node_id === verifying)).toMatchObject({
    sandbox_tiers: [
      {
        tier: "container",
        ready: false,
        detail: expect.stringMatching(/not answering at the last heartbeat/),
      },
      { tier: "process", ready: false, detail: "bwrap is not on PATH" },
    ],
    runtime_assets: { state: "verifying", assets: [] },
  });
  expect(items.find((r) => r.node_id === silent)).toMatchObject({
    sandbox_tiers: [],
    runtime_assets: { state: "unknown", assets: [] },
  });
});
