import { eq } from "drizzle-orm";
import { afterAll, beforeAll, expect, it } from "vitest";
import type { AgentHost } from "../../../agent-host/agent-host.ts";
import type { AdminNode } from "../../../shared/contracts/node.ts";
import type { Run } from "../../../shared/contracts/run.ts";
import { agentRuns } from "../../../shared/db/schema.ts";
import { requireDocker } from "../../support/docker.ts";
import { pollFor } from "../../support/poll-until.ts";
import {
  type FunctionsHarness,
  jsonOf,
  startFunctionsHarness,
} from "../functions/support/functions-harness.ts";
import { containersOfNode } from "../sandbox/sandbox-fixture.ts";
import { type ContainerNode, startContainerNode } from "./node-agent-host.ts";

// Operators through the API (docs/api.md "Nodes and runtimes", issue 14 (6)(7)): a real
// agent-host (data plane, sandbox manager, worker, heartbeat) and the control plane on
// one database and queue. Quiesce via the admin route: the node drains its sandboxes,
// takes no new one and says so on /readyz; resume restores it.

let h: FunctionsHarness;
let node: ContainerNode | undefined;
let host: AgentHost;
let nodeId: string;
const { docker, image } = requireDocker();

beforeAll(async () => {
  h = await startFunctionsHarness({ dbMax: 30 });
  node = await startContainerNode(h, { docker, image });
  ({ host, nodeId } = node);
});
afterAll(async () => {
  await node?.stop();
  await h?.close();
});

function until<T>(read: () => Promise<T>, ok: (v: T) => boolean, what: string): Promise<T> {
  return pollFor(read, ok, { what, intervalMs: 100 });
}

const readyz = async () => {
  const res = await fetch(`${host.dataPlaneUrl}/readyz`);
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
};

async function myNode(): Promise<AdminNode | undefined> {
  const res = await h.call("GET", "/v1/admin/nodes", { admin: true });
  expect(res.status).toBe(200);
  const { items } = await jsonOf<{ items: AdminNode[] }>(res);
  return items.find((n) => n.node_id === nodeId);
}

async function submit(input: string): Promise<Run> {
  const res = await h.call("POST", "/v1/runs", { body: { input } });
  expect(res.status).toBe(202);
  return (await jsonOf<{ run: Run }>(res)).run;
}

const runRow = async (runId: string) => {
  const [row] = await h.db.select().from(agentRuns).where(eq(agentRuns.runId, runId));
  if (row === undefined) throw new Error("no run");
  return row;
};

it("quiesce through the admin route drains the node and stops new sandboxes; resume restores it", async () => {
  // Liveness and readiness without auth; the admin list shows the node and its tier.
  expect((await fetch(`${host.dataPlaneUrl}/healthz`)).status).toBe(200);
  expect(await readyz()).toMatchObject({ status: 200, body: { ready: true } });
  expect(await myNode()).toMatchObject({ state: "active", sandbox_tiers: ["container"] });
  const health = await jsonOf<{ components: { nodes: string } }>(
    await h.call("GET", "/v1/healthz"),
  );
  expect(health.components.nodes).toBe("ok");

  // Non-admins are refused and change nothing; an unknown node is 404.
  expect((await h.call("POST", `/v1/admin/nodes/${nodeId}/quiesce`)).status).toBe(403);
  expect((await myNode())?.state).toBe("active");
  expect(
    (await h.call("POST", "/v1/admin/nodes/no-such-node/quiesce", { admin: true })).status,
  ).toBe(404);

  // A run holds a sandbox when the operator quiesces the node.
  const busy = await submit("sleep 3136");
  await until(
    () => containersOfNode(docker, nodeId),
    (c) => c.length === 1,
    "the run's sandbox",
  );
  expect((await h.call("POST", `/v1/admin/nodes/${nodeId}/quiesce`, { admin: true })).status).toBe(
    202,
  );
  await until(readyz, (r) => r.status === 503 && r.body.components !== undefined, "not ready");
  expect((await readyz()).body).toMatchObject({ ready: false, components: { quiesced: true } });
  // Drained: the node's sandbox is gone (its run ends, it lost its sandbox).
  await until(
    () => containersOfNode(docker, nodeId),
    (c) => c.length === 0,
    "the drain",
  );
  await until(
    () => runRow(busy.run_id),
    (r) => r.status !== "running" && r.status !== "pending",
    "the busy run to end",
  );
  expect((await myNode())?.state).toBe("quiesced");

  // No new sandbox while quiesced: a quiesced node claims nothing (fair share, decision
  // 0037), so the new run waits in Postgres, unclaimed and never executed here.
  const waiting = await submit("echo after-resume");
  const parked = await until(
    () => runRow(waiting.run_id),
    (r) => r.waitingSince !== null,
    "the run to wait",
  );
  expect(parked).toMatchObject({ status: "pending", attempt: 0 });
  expect(await containersOfNode(docker, nodeId)).toEqual([]);

  expect((await h.call("POST", `/v1/admin/nodes/${nodeId}/resume`, { admin: true })).status).toBe(
    202,
  );
  await until(readyz, (r) => r.status === 200, "ready again");
  const done = await until(
    () => runRow(waiting.run_id),
    (r) => r.status === "succeeded" || r.status === "failed",
    "the run after resume",
  );
  expect(done.status).toBe("succeeded");
  expect((await myNode())?.state).toBe("active");
}, 240_000);
