import { afterAll, beforeAll, expect, test } from "vitest";
import type { EgressProxy } from "../../../agent-host/egress/egress-proxy.ts";
import { decideApproval, listApprovals } from "../../../functions/approvals/approval-store.ts";
import { cancelRun } from "../../../functions/runs/cancel-run.ts";
import type { RunApprovalRow } from "../../../shared/db/schema.ts";
import { putNetworkOverride } from "../../../shared/network/network-policy-store.ts";
import { type FakeInternet, startFakeInternet } from "../../support/fake-internet.ts";
import { pollFor } from "../../support/poll-until.ts";
import { type RunWorld, runWorld, UID } from "../runs/run-harness.ts";
import { scriptedModels, toolOutputs } from "../runs/scripted-models.ts";
import { startEgressWorker } from "./support/egress-worker.ts";
import { RUNTIME_TREE } from "./support/tier-sandboxes.ts";

// Network approvals (issue #36 item 4, decision 0137): with agent.approvals.network, a
// host the user's ceiling allows but the run's narrowing leaves out asks a person instead
// of being refused. The proxy holds that one connection (the run stays `running`: its
// command is blocked on its socket), a pending `network` approval with host and port is
// stored and announced, and the decision lets the connection through or answers it 403.
// The worker end to end in the process tier with the real Runtime Assets (curl, the
// python3 relay) against the fake internet, whose servers count what reached them.

let world: RunWorld;
let net: FakeInternet;
let proxy: EgressProxy;
let models: ReturnType<typeof scriptedModels>;
const n = (label: string) => net.name(label);

/** curl printing the body's end, then ` <status>`; `-p` tunnels plain HTTP with CONNECT. */
const curl = (url: string, flags = "") =>
  `curl -s ${flags} --max-time 90 -w ' %{http_code}\\n' ${url} | tail -c 600`;

beforeAll(async () => {
  net = await startFakeInternet();
  await net.addHosts([
    [n("allowed"), net.address],
    [n("asked"), net.address],
    [n("refused"), net.address],
    [n("metadata"), "169.254.169.254"],
    [n("loopback"), "127.0.0.1"],
  ]);
  world = await runWorld({ execTimeoutMs: 120_000 }, "process", { runtimeDir: RUNTIME_TREE });
  // The run's input is its one command (the scripted model calls bash with it).
  models = scriptedModels((request) => [
    { toolCalls: [{ name: "bash", arguments: { command: request.input } }] },
    { text: "done" },
  ]);
  proxy = await startEgressWorker(world, models);
  await putNetworkOverride(world.db, UID, {
    mode: "allowlist",
    allow: [n("allowed"), n("asked"), n("refused"), n("metadata"), n("loopback")],
  });
}, 180_000);

afterAll(async () => {
  await world?.cleanup();
  await proxy?.close();
  await net?.close();
});

/** A run narrowed to the `allowed` host whose other hosts ask. */
async function submitAsking(command: string, timeoutSeconds = 300): Promise<string> {
  const project = await world.project({ uid: UID });
  const thread = await world.thread(project);
  return world.submit(thread, command, {
    network: { allow: [n("allowed")] },
    approvals: { network: true, timeout_seconds: timeoutSeconds },
  });
}

async function pendingApproval(runId: string): Promise<RunApprovalRow> {
  const rows = await pollFor(
    () => listApprovals(world.db, UID, runId),
    (r) => r?.some((row) => row.status === "pending") === true,
    { what: "a pending network approval", timeoutMs: 90_000, intervalMs: 100 },
  );
  const pending = rows?.find((row) => row.status === "pending");
  if (pending === undefined) throw new Error("no pending approval");
  return pending;
}

const approvalEvents = async (runId: string) =>
  (await world.events(runId))
    .filter((e) => e.type.startsWith("approval."))
    .map((e) => ({ type: e.type, status: (e.data as { status: string }).status }));

test("approved for the run: the held connection goes through, a second one (CONNECT) to the host passes without asking; another user cannot decide (404)", async () => {
  await net.resetSeen();
  const runId = await submitAsking(
    `${curl(`http://${n("asked")}/first`)}; ${curl(`http://${n("asked")}/second`, "-p")}`,
  );
  const pending = await pendingApproval(runId);
  expect(pending).toMatchObject({ kind: "network", host: n("asked"), port: 80, tool: null });
  // Held: the run goes on running (its command waits on its socket), nothing reached the host.
  expect((await world.run(runId)).status).toBe("running");
  expect(await net.seen()).toEqual([]);

  // Another user: no such run, no such approval; it stays pending.
  await expect(listApprovals(world.db, "mallory", runId)).resolves.toBeUndefined();
  await expect(
    decideApproval(
      world.db,
      "mallory",
      { runId, approvalId: pending.approvalId },
      { decision: "approve" },
    ),
  ).rejects.toMatchObject({ code: "not_found" });
  expect((await listApprovals(world.db, UID, runId))?.[0]?.status).toBe("pending");

  await decideApproval(
    world.db,
    UID,
    { runId, approvalId: pending.approvalId },
    { decision: "approve", scope: "run" },
  );
  const run = await world.waitForRun(runId, undefined, 120_000);
  expect(run.status).toBe("succeeded");
  const [output = ""] = toolOutputs(await world.events(runId));
  expect(output).toBe(
    `hello from ${n("asked")} on 80\n 200\nhello from ${n("asked")} on 80\n 200\n`,
  );
  expect((await net.seen()).map((s) => s.path)).toEqual(["/first", "/second"]);
  // One approval for both connections, and its two events in the run's own log.
  const rows = await listApprovals(world.db, UID, runId);
  expect(rows?.map((r) => [r.kind, r.host, r.port, r.status, r.scope])).toEqual([
    ["network", n("asked"), 80, "approved", "run"],
  ]);
  expect(await approvalEvents(runId)).toEqual([
    { type: "approval.requested", status: "pending" },
    { type: "approval.resolved", status: "approved" },
  ]);
  // The agent was told that other hosts wait for the user rather than fail.
  const client = models.clients.find((c) => c.request.runId === runId)?.client;
  expect(String(client?.requests[0]?.messages[0]?.content)).toContain(
    "A connection to another host waits until the user approves it",
  );
}, 240_000);

test("denied: the held connection gets 403 with the person's note, nothing reached the host, a second decision is 409", async () => {
  await net.resetSeen();
  const runId = await submitAsking(
    `${curl(`http://${n("refused")}/never`)}; ${curl(`http://${n("allowed")}/narrowed`)}`,
  );
  const pending = await pendingApproval(runId);
  expect(pending.host).toBe(n("refused"));
  await decideApproval(
    world.db,
    UID,
    { runId, approvalId: pending.approvalId },
    { decision: "deny", note: "not that one" },
  );
  const run = await world.waitForRun(runId, undefined, 120_000);
  expect(run.status).toBe("succeeded");
  const [output = ""] = toolOutputs(await world.events(runId));
  expect(output).toMatch(/"reason":"approval_denied".* 403\n/);
  expect(output).toContain(`Denied by ${UID}: not that one.`);
  // The narrowed host never asked.
  expect(output).toContain(`hello from ${n("allowed")} on 80\n 200\n`);
  expect((await net.seen()).map((s) => [s.host, s.path])).toEqual([[n("allowed"), "/narrowed"]]);
  expect(await approvalEvents(runId)).toEqual([
    { type: "approval.requested", status: "pending" },
    { type: "approval.resolved", status: "denied" },
  ]);
  // A second decision is a conflict, as for a tool's approval.
  await expect(
    decideApproval(
      world.db,
      UID,
      { runId, approvalId: pending.approvalId },
      { decision: "approve" },
    ),
  ).rejects.toMatchObject({ code: "conflict" });
}, 240_000);

test("approved once: the next connection to the host asks again", async () => {
  await net.resetSeen();
  const runId = await submitAsking(
    `${curl(`http://${n("asked")}/once`)}; ${curl(`http://${n("asked")}/again`)}`,
  );
  const first = await pendingApproval(runId);
  await decideApproval(
    world.db,
    UID,
    { runId, approvalId: first.approvalId },
    { decision: "approve" },
  );
  const second = await pollFor(
    () => listApprovals(world.db, UID, runId),
    (r) =>
      r?.some((row) => row.status === "pending" && row.approvalId !== first.approvalId) === true,
    { what: "the second request's approval", timeoutMs: 90_000, intervalMs: 100 },
  );
  expect((await net.seen()).map((s) => s.path)).toEqual(["/once"]);
  const again = second?.find((row) => row.status === "pending");
  if (again === undefined) throw new Error("no second approval");
  await decideApproval(
    world.db,
    UID,
    { runId, approvalId: again.approvalId },
    { decision: "deny" },
  );
  expect((await world.waitForRun(runId, undefined, 120_000)).status).toBe("succeeded");
  const [output = ""] = toolOutputs(await world.events(runId));
  expect(output).toMatch(/^hello from .* on 80\n 200\n.*"reason":"approval_denied".* 403\n$/s);
  expect((await net.seen()).map((s) => s.path)).toEqual(["/once"]);
}, 240_000);

test("always-denied addresses (metadata, loopback) are refused without asking", async () => {
  await net.resetSeen();
  const runId = await submitAsking(
    `${curl(`http://${n("metadata")}/latest/meta-data/`)}; ${curl(`http://${n("loopback")}/`)}`,
  );
  const run = await world.waitForRun(runId, undefined, 120_000);
  expect(run.status).toBe("succeeded");
  const [output = ""] = toolOutputs(await world.events(runId));
  expect(output.match(/"reason":"private_address".* 403\n/g)?.length).toBe(2);
  expect(await listApprovals(world.db, UID, runId)).toEqual([]);
  expect(await approvalEvents(runId)).toEqual([]);
  expect(await net.seen()).toEqual([]);
}, 240_000);

test("expired, through SOCKS: nobody decides within the timeout, the held SOCKS connection is refused and nothing reached the host", async () => {
  await net.resetSeen();
  const runId = await submitAsking(
    `echo "$ALL_PROXY" | cut -c1-10; ${curl(`http://${n("asked")}/socks`, '--proxy "$ALL_PROXY"')}`,
    10,
  );
  const pending = await pendingApproval(runId);
  expect(pending).toMatchObject({ kind: "network", host: n("asked"), port: 80 });
  const run = await world.waitForRun(runId, undefined, 120_000);
  expect(run.status).toBe("succeeded");
  const [output = ""] = toolOutputs(await world.events(runId));
  expect(output).toBe("socks5h://\n 000\n");
  const [row] = (await listApprovals(world.db, UID, runId)) ?? [];
  expect(row).toMatchObject({ status: "expired", decidedBy: null });
  expect(await approvalEvents(runId)).toEqual([
    { type: "approval.requested", status: "pending" },
    { type: "approval.resolved", status: "expired" },
  ]);
  expect(await net.seen()).toEqual([]);
}, 240_000);

test("a client that gives up ends the wait: its approval is closed and a late approval lets nothing through", async () => {
  await net.resetSeen();
  const runId = await submitAsking(
    `curl -s --max-time 3 -w ' %{http_code}\\n' http://${n("asked")}/gave-up; echo "curl exit $?"`,
  );
  const pending = await pendingApproval(runId);
  const run = await world.waitForRun(runId, undefined, 120_000);
  expect(run.status).toBe("succeeded");
  const [output = ""] = toolOutputs(await world.events(runId));
  expect(output).toBe(" 000\ncurl exit 28\n");
  const [row] = (await listApprovals(world.db, UID, runId)) ?? [];
  expect(row).toMatchObject({
    approvalId: pending.approvalId,
    status: "denied",
    note: "The connection closed before a decision.",
  });
  await expect(
    decideApproval(
      world.db,
      UID,
      { runId, approvalId: pending.approvalId },
      { decision: "approve" },
    ),
  ).rejects.toMatchObject({ code: "conflict" });
  expect(await net.seen()).toEqual([]);
}, 240_000);

test("cancel while a connection waits: the run ends cancelled, its approval is closed, nothing reached the host", async () => {
  await net.resetSeen();
  const runId = await submitAsking(curl(`http://${n("asked")}/cancelled`));
  const pending = await pendingApproval(runId);
  await cancelRun(world.db, UID, runId);
  const run = await world.waitForRun(runId, undefined, 120_000);
  expect(run.status).toBe("cancelled");
  const rows = await pollFor(
    () => listApprovals(world.db, UID, runId),
    (r) => r?.[0]?.status !== "pending",
    { what: "the approval closed", timeoutMs: 30_000, intervalMs: 100 },
  );
  expect(rows?.map((r) => [r.approvalId, r.status])).toEqual([[pending.approvalId, "denied"]]);
  expect(await net.seen()).toEqual([]);
}, 240_000);
