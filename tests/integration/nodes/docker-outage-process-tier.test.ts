import { randomBytes } from "node:crypto";
import { rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Docker from "dockerode";
import { afterAll, beforeAll, expect, it } from "vitest";
import type { AgentHost } from "../../../agent-host/agent-host.ts";
import { resolveSandboxImage } from "../../../agent-host/runtime/sandbox-image.ts";
import { detectSandboxTiers } from "../../../agent-host/sandbox/detect-sandbox-tiers.ts";
import { LABEL } from "../../../agent-host/sandbox/instance/container-labels.ts";
import { detectCgroups } from "../../../agent-host/sandbox/process/sandbox-cgroups.ts";
import { DEFAULT_RUNTIME_ASSETS_DIR } from "../../../shared/env/agent-host-env.ts";
import { removeContainersLabelled, requireDocker } from "../../support/docker.ts";
import { type PausableProxy, startPausableProxy } from "../../support/pausable-proxy.ts";
import {
  type FunctionsHarness,
  startFunctionsHarness,
} from "../functions/support/functions-harness.ts";
import { silentLogger, testConfig, uniqueNodeId } from "../sandbox/sandbox-fixture.ts";
import { startNodeAgentHost } from "./node-agent-host.ts";
import { effectRuns } from "./support/effect-runs.ts";

// Issue 38 ("a tier outage affects only that tier"), decision 0114: one real agent-host
// with both tiers reaches dockerd only through a proxy on a unix socket; the test cuts it
// (connections reset, new ones refused). The node keeps serving process-tier runs, and a
// container-tier run submitted meanwhile waits, unclaimed, until Docker is back.

const DOCKER_SOCKET = "/var/run/docker.sock";
const { docker } = requireDocker();
const treeDir = process.env.RUNTIME_ASSETS_DIR ?? DEFAULT_RUNTIME_ASSETS_DIR;
let h: FunctionsHarness;
let proxy: PausableProxy;
let host: AgentHost | undefined;
let nodeId: string;
const stateDir = join(tmpdir(), `workcell-test-tier-cut-${randomBytes(6).toString("hex")}`);

beforeAll(async () => {
  h = await startFunctionsHarness({ dbMax: 20 });
  nodeId = uniqueNodeId();
  proxy = await startPausableProxy(
    { path: DOCKER_SOCKET },
    { listenPath: join(h.dataRoot, `docker-${randomBytes(4).toString("hex")}.sock`) },
  );
  // The real Runtime Assets (the process tier's bash) and their image, as node-runtime.test.ts.
  const config = testConfig(
    await resolveSandboxImage({ configured: undefined, runtimeDir: treeDir }),
    { memoryBytes: 512 * 1024 * 1024, drainTimeoutMs: 500, killGraceMs: 500 },
  );
  host = await startNodeAgentHost(h, {
    nodeId,
    config,
    heartbeatMs: 1_000,
    sandboxTiers: await detectSandboxTiers({
      logger: silentLogger,
      dataRoot: h.dataRoot,
      nodeId,
      config,
      runtimeDir: treeDir,
      docker: new Docker({ socketPath: proxy.path as string }),
      process: { stateDir, cgroupParent: `workcell-test/${nodeId}` },
    }),
  });
}, 300_000);
afterAll(async () => {
  proxy?.resume();
  await host?.stop();
  await removeContainersLabelled(docker, LABEL.nodeId, nodeId);
  await proxy?.close();
  await rm(stateDir, { recursive: true, force: true });
  const cgroups = await detectCgroups(`workcell-test/${nodeId}`);
  if (cgroups.ok) await cgroups.cgroups.removeParent().catch(() => {});
  await h?.close();
}, 120_000);

const { until, submit, runRow, terminal, effectsOf } = effectRuns(() => h);
const tiersOf = async () => {
  const res = await fetch(`${host?.dataPlaneUrl}/readyz`, { signal: AbortSignal.timeout(10_000) });
  const body = (await res.json()) as { components?: { sandbox_tiers?: string[] } };
  return { status: res.status, tiers: [...(body.components?.sandbox_tiers ?? [])].sort() };
};

it("Docker cut on a node with both tiers: its process-tier runs keep succeeding there, its container runs wait for Docker and then run once", async () => {
  await until(tiersOf, (r) => r.tiers.join() === "container,process", "both tiers ready");

  proxy.cut();
  // The node's tier probe noticed: only the process tier is left.
  await until(tiersOf, (r) => r.tiers.join() === "process", "the container tier gone");

  const container = await submit("container", { agent: { sandbox: "container" } });
  const processRuns = [
    await submit("process", { agent: { sandbox: "process" } }),
    await submit("process", { agent: { sandbox: "process" } }),
  ];
  for (const s of processRuns) {
    // Claimed once, on this node, and run there although its Docker is gone.
    expect(await terminal(s.run.run_id), s.tag).toMatchObject({
      status: "succeeded",
      ownerNode: nodeId,
      attempt: 1,
    });
    expect(await effectsOf(s), s.tag).toBe(1);
  }
  // The container run was never claimed meanwhile (nothing to hand back or fail).
  expect(await runRow(container.run.run_id)).toMatchObject({ status: "pending", attempt: 0 });
  expect(await effectsOf(container)).toBe(0);

  proxy.resume();
  await until(tiersOf, (r) => r.tiers.join() === "container,process", "Docker back");
  expect(await terminal(container.run.run_id)).toMatchObject({
    status: "succeeded",
    ownerNode: nodeId,
    attempt: 1,
  });
  expect(await effectsOf(container)).toBe(1);
}, 300_000);
