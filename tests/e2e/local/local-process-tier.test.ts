import { readdir } from "node:fs/promises";
import Docker from "dockerode";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { LABEL } from "../../../agent-host/sandbox/instance/container-labels.ts";
import { localNodeId } from "../../../infra/local/local-stack.ts";
import { processesInCgroup } from "../../support/host-processes.ts";
import { type LocalWorkcell, startLocalWorkcell } from "../../support/local-workcell-process.ts";
import { pollUntil } from "../../support/poll-until.ts";

// A Docker engine that does not answer: the socket path does not exist.
const NO_DOCKER = "unix:///nonexistent-workcell-test/docker.sock";
const RUN_DEADLINE_MS = 300_000;

type RunEnd = { events: string; status: string | undefined };

/** Submits one run and reads its events until the stream ends (at run.completed). */
async function runToEnd(wc: LocalWorkcell, token: string, body: object): Promise<RunEnd> {
  const headers = { Authorization: `Bearer ${token}`, "content-type": "application/json" };
  const submitted = await fetch(`${wc.url}/v1/runs`, {
    method: "POST",
    headers,
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(RUN_DEADLINE_MS),
  });
  expect(submitted.status).toBe(202);
  const { run } = (await submitted.json()) as { run: { run_id: string } };
  const events = await (
    await fetch(`${wc.url}/v1/runs/${run.run_id}/events`, {
      headers,
      signal: AbortSignal.timeout(RUN_DEADLINE_MS),
    })
  ).text();
  const final = (await (await fetch(`${wc.url}/v1/runs/${run.run_id}`, { headers })).json()) as {
    status?: string;
  };
  return { events, status: final.status };
}

// The README's local command on a node without Docker (issue 20, "done means"): the
// process tier is picked, runs succeed in it, and the container tier is refused.
describe("the local Workcell without a Docker engine", () => {
  let wc: LocalWorkcell;
  let nodeId: string;
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    await wc?.stop();
  };
  // The real engine on this machine: the test checks nothing was created there.
  const docker = new Docker();

  beforeAll(async () => {
    wc = await startLocalWorkcell({ DOCKER_HOST: NO_DOCKER });
    nodeId = localNodeId(wc.dataDir);
  }, 600_000);
  afterAll(stop);

  test("picks the process tier and runs a command in it", async () => {
    expect(wc.output()).toMatch(/Sandbox +process tier \(/);
    const admin = await wc.token("root", { admin: true });
    const nodes = (await (
      await fetch(`${wc.url}/v1/admin/nodes`, { headers: { Authorization: `Bearer ${admin}` } })
    ).json()) as { items: { node_id: string; sandbox_tiers: unknown }[] };
    const node = nodes.items.find((n) => n.node_id === nodeId);
    // The node's ready tiers: the process tier only.
    expect(node?.sandbox_tiers).toEqual(["process"]);

    const token = await wc.token("alice");
    const end = await runToEnd(wc, token, {
      input:
        'echo hello > outputs/hello.txt && cat outputs/hello.txt && echo "bash $BASH_VERSION" && grep -E "^(NoNewPrivs|CapEff):" /proc/self/status',
    });
    expect(end.status).toBe("succeeded");
    expect(end.events).toContain("hello");
    // The runtime's real bash, with no privileges left.
    expect(end.events).toMatch(/bash 5\./);
    expect(end.events).toMatch(/NoNewPrivs:\\t1/);
    expect(end.events).toMatch(/CapEff:\\t0{16}/);
    // Its sandbox lives in the node's process-tier cgroup, not in a container: the next
    // exec's sandbox is built there once the run's exec returned (decision 0088).
    await pollUntil(async () => (await processesInCgroup(`workcell/${nodeId}/`)).length > 0);
    expect((await processesInCgroup(`workcell/${nodeId}/`)).length).toBeGreaterThan(0);
    const containers = await docker.listContainers({
      all: true,
      filters: { label: [`${LABEL.nodeId}=${nodeId}`] },
    });
    expect(containers).toEqual([]);
  }, 600_000);

  test("refuses a run that asks for the container tier, and creates nothing", async () => {
    const token = await wc.token("bob");
    const end = await runToEnd(wc, token, {
      input: "echo ran > outputs/ran.txt",
      agent: { sandbox: "container" },
    });
    expect(end.status).toBe("failed");
    expect(end.events).toContain("sandbox_tier_unavailable");
    // Nothing ran: no file of that name anywhere in the node's data.
    const files = await readdir(wc.dataDir, { recursive: true });
    expect(files.filter((f) => f.endsWith("ran.txt"))).toEqual([]);
    const containers = await docker.listContainers({
      all: true,
      filters: { label: [`${LABEL.nodeId}=${nodeId}`] },
    });
    expect(containers).toEqual([]);
  }, 600_000);

  test("leaves no sandbox process on the host once stopped", async () => {
    await stop();
    expect(await processesInCgroup(`workcell/${nodeId}/`)).toEqual([]);
  }, 600_000);
});
