import { randomUUID } from "node:crypto";
import { access, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Docker from "dockerode";
import { eq } from "drizzle-orm";
import { afterAll, beforeAll, expect, it } from "vitest";
import type { AgentHost } from "../../../agent-host/agent-host.ts";
import { detectSandboxTiers } from "../../../agent-host/sandbox/detect-sandbox-tiers.ts";
import type { Run } from "../../../shared/contracts/run.ts";
import { agentRuns } from "../../../shared/db/schema.ts";
import { requireDocker } from "../../support/docker.ts";
import { busyboxRuntimeDir } from "../../support/process-tier.ts";
import {
  type FunctionsHarness,
  jsonOf,
  startFunctionsHarness,
} from "../functions/support/functions-harness.ts";
import {
  containersOfNode,
  silentLogger,
  testConfig,
  uniqueNodeId,
} from "../sandbox/sandbox-fixture.ts";
import { startNodeAgentHost } from "./node-agent-host.ts";

// The no-isolation path (docs/architecture.md §8, issue 11 item 7): a node where no Docker
// engine answers and bubblewrap is missing starts (files still served), says it is not
// ready, and refuses every run with `no_isolation_available`: the command never runs,
// neither in a sandbox nor, the failure this guards against, on the host.

const hostPath = process.env.PATH ?? "";
/** PATH without the directories that hold bwrap, so the process tier is missing too. */
const pathWithoutBwrap = hostPath
  .split(":")
  .filter((d) => !["/usr/bin", "/bin", "/usr/local/bin"].includes(d))
  .concat(["/nonexistent"])
  .join(":");

let h: FunctionsHarness;
let host: AgentHost;
let nodeId: string;
let stateDir: string;
const { docker } = requireDocker();

beforeAll(async () => {
  h = await startFunctionsHarness({ dbMax: 30 });
  nodeId = uniqueNodeId();
  stateDir = join(tmpdir(), `workcell-no-isolation-${randomUUID()}`);
  const config = testConfig("unused");
  host = await startNodeAgentHost(h, {
    nodeId,
    config,
    sandboxTiers: await detectSandboxTiers({
      logger: silentLogger,
      dataRoot: h.dataRoot,
      nodeId: nodeId,
      config,
      runtimeDir: await busyboxRuntimeDir(),
      // A socket nobody listens on: what a node without a Docker engine sees.
      docker: new Docker({ socketPath: join(stateDir, "no-docker.sock") }),
      process: { stateDir, cgroupParent: `workcell-test/${nodeId}`, path: pathWithoutBwrap },
    }),
  });
});
afterAll(async () => {
  await host?.stop();
  await h?.close();
  await rm(stateDir, { recursive: true, force: true });
});

const runRow = async (runId: string) => {
  const [row] = await h.db.select().from(agentRuns).where(eq(agentRuns.runId, runId));
  if (row === undefined) throw new Error("no run");
  return row;
};

it("without Docker or bubblewrap: not ready, and a run fails no_isolation_available without running anywhere", async () => {
  expect(host.sandboxDriver).toMatchObject({ kind: "none" });
  expect((await fetch(`${host.dataPlaneUrl}/healthz`)).status).toBe(200);
  const ready = await fetch(`${host.dataPlaneUrl}/readyz`);
  expect(ready.status).toBe(503);

  // On the host this would create the marker; in no sandbox can it run at all.
  const marker = join(tmpdir(), `workcell-ran-on-host-${randomUUID()}`);
  const res = await h.call("POST", "/v1/runs", { body: { input: `touch ${marker}` } });
  expect(res.status).toBe(202);
  const { run } = await jsonOf<{ run: Run }>(res);
  await expect
    .poll(async () => (await runRow(run.run_id)).status, { timeout: 60_000, interval: 100 })
    .toBe("failed");
  const ended = await runRow(run.run_id);
  expect(ended.error).toMatchObject({ code: "no_isolation_available" });
  expect((ended.error as { message: string }).message).toMatch(/start the Docker engine/);

  // Nothing ran: no marker on the host, no container, no process-tier sandbox.
  expect(
    await access(marker).then(
      () => true,
      () => false,
    ),
  ).toBe(false);
  expect(await containersOfNode(docker, nodeId)).toEqual([]);
  expect(await readdir(stateDir).catch(() => [])).toEqual([]);
  // And the control plane knows no node can run anything.
  const health = await jsonOf<{ components: { nodes: string } }>(
    await h.call("GET", "/v1/healthz"),
  );
  expect(health.components.nodes).toBe("none_ready");
});
