import { randomBytes } from "node:crypto";
import { join } from "node:path";
import Docker from "dockerode";
import { and, eq, inArray } from "drizzle-orm";
import { afterAll, beforeAll, expect, it } from "vitest";
import type { AdminNode } from "../../../shared/contracts/node.ts";
import { runEvents, sandboxes } from "../../../shared/db/schema.ts";
import { requireDocker } from "../../support/docker.ts";
import { type PausableProxy, startPausableProxy } from "../../support/pausable-proxy.ts";
import {
  type FunctionsHarness,
  jsonOf,
  startFunctionsHarness,
} from "../functions/support/functions-harness.ts";
import { containersOfNode } from "../sandbox/sandbox-fixture.ts";
import { type ContainerNode, startContainerNode } from "./node-agent-host.ts";
import { effectRuns } from "./support/effect-runs.ts";

// Issue 14 (5), docs/architecture.md §10: one agent-host's Docker goes away while the other's
// stays. Node A reaches dockerd only through a proxy on a unix socket that the test cuts
// (connections reset, new ones refused) or pauses (every byte held: a hung engine). Node
// B uses the real socket. Both are real agent-hosts (data plane, worker, heartbeat,
// sandbox manager) on the control plane's Postgres, queue and data root.

const DOCKER_SOCKET = "/var/run/docker.sock";
/** A's bound on one Docker call: short, so a hung create costs the test about this long. */
const DOCKER_CALL_TIMEOUT_MS = 2_000;
const CREATE = /^POST [^ ]*\/containers\/create[? ]/;

let h: FunctionsHarness;
let proxy: PausableProxy;
let a: ContainerNode | undefined;
let b: ContainerNode | undefined;
const { docker, image } = requireDocker();
/** Set by a test: the next container create through A's proxy takes effect, its answer never comes. */
let hangNextCreate = false;

beforeAll(async () => {
  h = await startFunctionsHarness({ dbMax: 40 });
  proxy = await startPausableProxy(
    { path: DOCKER_SOCKET },
    {
      listenPath: join(h.dataRoot, `docker-a-${randomBytes(4).toString("hex")}.sock`),
      pauseReplyTo: (chunk) => {
        if (!hangNextCreate || !CREATE.test(chunk.toString("latin1"))) return false;
        hangNextCreate = false;
        return true;
      },
    },
  );
  a = await startContainerNode(h, {
    docker,
    image,
    nodeDocker: new Docker({ socketPath: proxy.path as string }),
    config: { dockerCallTimeoutMs: DOCKER_CALL_TIMEOUT_MS },
    heartbeatMs: 1_000,
  });
  b = await startContainerNode(h, { docker, image, heartbeatMs: 1_000 });
}, 120_000);

afterAll(async () => {
  proxy?.resume();
  await a?.stop();
  await b?.stop();
  await proxy?.close();
  await h?.close();
}, 120_000);

const { until, submit, runRow, terminal, effectsOf } = effectRuns(() => h);
const A = () => a as ContainerNode;
const B = () => b as ContainerNode;

const readyz = async (node: ContainerNode) => {
  const res = await fetch(`${node.host.dataPlaneUrl}/readyz`, {
    signal: AbortSignal.timeout(10_000),
  });
  return {
    status: res.status,
    body: (await res.json()) as { components?: { sandbox_tiers?: string[] } },
  };
};

/** Waits until the node's /readyz answers `status` (200 ready, 503 not). */
const readyzIs = (node: ContainerNode, status: 200 | 503, what: string) =>
  until(
    () => readyz(node),
    (r) => r.status === status,
    what,
  );

async function adminNode(nodeId: string): Promise<AdminNode | undefined> {
  const res = await h.call("GET", "/v1/admin/nodes", { admin: true });
  const { items } = await jsonOf<{ items: AdminNode[] }>(res);
  return items.find((n) => n.node_id === nodeId);
}

async function setState(node: ContainerNode, action: "quiesce" | "resume") {
  const res = await h.call("POST", `/v1/admin/nodes/${node.nodeId}/${action}`, { admin: true });
  expect(res.status).toBe(202);
  await readyzIs(node, action === "quiesce" ? 503 : 200, `${node.nodeId} ${action}d`);
}

const liveRowsOf = async (nodeId: string) =>
  h.db
    .select({ id: sandboxes.sandboxId, state: sandboxes.state })
    .from(sandboxes)
    .where(
      and(
        eq(sandboxes.nodeId, nodeId),
        inArray(sandboxes.state, ["creating", "running", "destroying"]),
      ),
    );

/**
 * No container of A once its Docker is back, and no sandbox row of A left live. The row
 * of a destroy in flight turns `destroyed` just after its container is removed, so both
 * are awaited (a row that stays live fails with the deadline and is printed).
 */
async function expectNothingLeftOnA() {
  await until(
    () => containersOfNode(docker, A().nodeId),
    (c) => c.length === 0,
    "A's containers to be removed after the outage",
  );
  await until(
    () => liveRowsOf(A().nodeId),
    (rows) => rows.length === 0,
    "A's sandbox rows to be settled after the outage",
  );
}

it("A's Docker socket cut during runs: its run mid-command fails tool_interrupted, A says not ready and claims nothing, B serves every other run exactly once, nothing of A is left once the socket is back", async () => {
  // A runs a command that is under way (its effect is written) when the socket goes.
  await setState(B(), "quiesce");
  const midCommand = await submit("mid", { andThen: "sleep 60" });
  await until(
    () => effectsOf(midCommand),
    (n) => n === 1,
    "the mid-command run's effect",
  );
  expect((await runRow(midCommand.run.run_id)).ownerNode).toBe(A().nodeId);
  await setState(B(), "resume");

  proxy.cut();
  const failed = await terminal(midCommand.run.run_id);
  expect(failed.status).toBe("failed");
  expect(failed.error?.code).toBe("tool_interrupted");
  // It says the command ran (it did), never "retry the run".
  expect(failed.error?.message).toMatch(/check the Workdir before retrying/);
  expect(failed.error?.message).not.toMatch(/retry the run/);

  // A is not ready and its row lists no tier; the control plane still has a ready node.
  const notReady = await readyzIs(A(), 503, "A not ready");
  expect(notReady.body.components?.sandbox_tiers).toEqual([]);
  await until(
    () => adminNode(A().nodeId),
    (n) => n?.sandbox_tiers.length === 0,
    "A's row",
  );
  expect((await adminNode(B().nodeId))?.sandbox_tiers).toEqual(["container"]);
  const health = await jsonOf<{ components: { nodes: string } }>(
    await h.call("GET", "/v1/healthz"),
  );
  expect(health.components.nodes).toBe("ok");

  // Runs during the outage: all on B, each effect exactly once, none claimed by A.
  const during = await Promise.all([1, 2, 3, 4].map((i) => submit(`during${i}`)));
  for (const s of during) {
    const row = await terminal(s.run.run_id);
    // Claimed once, by B: A, whose engine is gone, never took it to hand it back.
    expect(row, s.tag).toMatchObject({ status: "succeeded", ownerNode: B().nodeId, attempt: 1 });
    expect(await effectsOf(s), s.tag).toBe(1);
  }
  expect(await effectsOf(midCommand)).toBe(1);

  // The socket is back: A is ready again, takes runs, and nothing of the outage remains.
  proxy.resume();
  await readyzIs(A(), 200, "A ready again");
  await setState(B(), "quiesce");
  const after = await submit("after");
  expect(await terminal(after.run.run_id)).toMatchObject({
    status: "succeeded",
    ownerNode: A().nodeId,
  });
  expect(await effectsOf(after)).toBe(1);
  await setState(B(), "resume");
  await expectNothingLeftOnA();
}, 300_000);

it("a run whose sandbox create is cut off by a Docker blip is handed back, runs exactly once on the other node, and the container the blip left is removed once Docker is back", async () => {
  await readyzIs(A(), 200, "A ready");
  // Only A claims: the run's create reaches dockerd, whose answer A never gets (the
  // proxy then holds everything: Docker hangs for A).
  await setState(B(), "quiesce");
  hangNextCreate = true;
  const blipped = await submit("blip");
  await until(
    async () => proxy.stopped,
    (s) => s,
    "A's create to reach dockerd",
  );
  // The create took effect in dockerd: a container of A that A does not know.
  await until(
    () => containersOfNode(docker, A().nodeId),
    (c) => c.length === 1,
    "the container the cut-off create left",
  );
  // A notices its engine is gone (readiness), then B may take the run.
  await readyzIs(A(), 503, "A not ready");
  const handedBack = await until(
    () => runRow(blipped.run.run_id),
    (r) => r.status === "pending" && r.attempt >= 1,
    "the run to be handed back",
  );
  expect(handedBack.ownerNode).toBeNull();
  // Nothing of it ran on A.
  expect(await effectsOf(blipped)).toBe(0);
  const toolStarts = await h.db
    .select()
    .from(runEvents)
    .where(and(eq(runEvents.runId, blipped.run.run_id), eq(runEvents.type, "tool.started")));
  expect(toolStarts).toEqual([]);
  await setState(B(), "resume");

  const done = await terminal(blipped.run.run_id);
  expect(done).toMatchObject({ status: "succeeded", ownerNode: B().nodeId, error: null });
  expect(done.attempt).toBeGreaterThanOrEqual(2);
  expect(await effectsOf(blipped)).toBe(1);

  // Docker answers A again: the container the blip left is removed (A never adopted it).
  proxy.resume();
  await readyzIs(A(), 200, "A ready again");
  await expectNothingLeftOnA();
  expect(await effectsOf(blipped)).toBe(1);
}, 300_000);

it("a cancel while A's Docker hangs mid-command ends the run before Docker answers again, and nothing of it is left once it does", async () => {
  await readyzIs(A(), 200, "A ready");
  await setState(B(), "quiesce");
  const hung = await submit("hung", { andThen: "sleep 60" });
  await until(
    () => effectsOf(hung),
    (n) => n === 1,
    "the command to be under way",
  );
  expect((await runRow(hung.run.run_id)).ownerNode).toBe(A().nodeId);
  proxy.pause();
  await readyzIs(A(), 503, "A not ready");

  const cancelledAt = performance.now();
  const res = await h.call("POST", `/v1/runs/${hung.run.run_id}/cancel`, { uid: hung.uid });
  expect(res.status).toBe(202);
  const ended = await terminal(hung.run.run_id);
  const tookMs = performance.now() - cancelledAt;
  // Ended by the cancel, while every Docker call of A still hangs: stopping a run waits
  // on no engine call (issue 14: "cancels take effect within a second").
  expect(ended.status).toBe("cancelled");
  expect(proxy.stopped).toBe(true);
  // How long it took is printed, not asserted (no timing assertions: a loaded CI machine
  // decides that, not the code); the bound is what ends it if the stop ever waits again.
  console.info(`cancel during a hung engine took ${Math.round(tookMs)} ms`);
  await setState(B(), "resume");

  proxy.resume();
  await readyzIs(A(), 200, "A ready again");
  await expectNothingLeftOnA();
  expect(await effectsOf(hung)).toBe(1);
}, 300_000);

it("a run cancelled while its sandbox create hangs on A's engine ends cancelled with nothing run, and the container the create left is removed once Docker answers", async () => {
  await readyzIs(A(), 200, "A ready");
  await setState(B(), "quiesce");
  hangNextCreate = true;
  const hung = await submit("hung-acquire", { andThen: "sleep 60" });
  await until(
    async () => proxy.stopped,
    (s) => s,
    "A's create to reach dockerd",
  );
  const res = await h.call("POST", `/v1/runs/${hung.run.run_id}/cancel`, { uid: hung.uid });
  expect(res.status).toBe(202);
  const ended = await terminal(hung.run.run_id);
  // Cancelled, and nothing of it ran, whichever came first on a loaded machine: the
  // cancel, while A's acquire waited on the engine (the run is still A's), or the
  // create's 2 s bound, which hands the run back (no owner) before the cancel ends it.
  expect(ended.status).toBe("cancelled");
  expect([A().nodeId, null]).toContain(ended.ownerNode);
  expect(proxy.stopped).toBe(true);
  const toolStarts = await h.db
    .select()
    .from(runEvents)
    .where(and(eq(runEvents.runId, hung.run.run_id), eq(runEvents.type, "tool.started")));
  expect(toolStarts).toEqual([]);
  await setState(B(), "resume");

  // The create's answer arrives with nobody waiting: what it made is removed.
  proxy.resume();
  await readyzIs(A(), 200, "A ready again");
  await expectNothingLeftOnA();
  expect(await effectsOf(hung)).toBe(0);
}, 300_000);
