import { Registry } from "prom-client";
import { describe, expect, test } from "vitest";
import { recordPause } from "../../../agent-host/approvals/record-pause.ts";
import { nextEventSeq } from "../../../agent-host/runs/claim/run-event-log.ts";
import { countAwaitingRuns } from "../../../functions/approvals/count-awaiting-runs.ts";
import { DECISION_NOTIFY_PAYLOAD } from "../../../shared/approvals/resolve-approval.ts";
import type { ApprovalBody } from "../../../shared/contracts/approval.ts";
import type { Run } from "../../../shared/contracts/run.ts";
import { nodes } from "../../../shared/db/schema.ts";
import { createWorkcellMetrics } from "../../../shared/metrics/workcell-metrics.ts";
import { RUN_SLOTS_CHANNEL } from "../../../shared/runs/run-channels.ts";
import { claimParkedRun } from "../../support/claim-parked-run.ts";
import { pollUntil } from "../../support/poll-until.ts";
import { ALICE, BOB, type ErrorJson, jsonOf } from "../functions/support/functions-harness.ts";
import { functionsHarnessForFile } from "../functions/support/functions-harness-for-file.ts";

// docs/api.md "Approvals" over HTTP: the run is paused by the worker's own code (claim, then
// recordPause), everything else goes through the app.

const h = functionsHarnessForFile();
const COMMAND = { command: "rm -rf outputs" };

async function pausedRun(uid: string): Promise<{ runId: string; approvalId: string }> {
  const submitted = await jsonOf<{ run: Run }>(
    await h.call("POST", "/v1/runs", {
      uid,
      body: { input: "rm -rf outputs", agent: { approvals: { tools: ["bash"] } } },
    }),
  );
  const runId = submitted.run.run_id;
  await h.db
    .insert(nodes)
    .values({ nodeId: "node-a", dataPlaneUrl: "http://127.0.0.1:1" })
    .onConflictDoNothing();
  const claim = await claimParkedRun(h.db, { runId, nodeId: "node-a", leaseTtlMs: 60_000 });
  if (!claim.ok) throw new Error("the run was not claimed");
  const paused = await recordPause(
    h.db,
    claim.fence,
    await nextEventSeq(h.db, runId),
    {
      kind: "paused",
      pause: {
        newMessages: [],
        pendingCalls: [{ id: "shell_1", name: "bash", arguments: JSON.stringify(COMMAND) }],
        turns: 1,
        usage: { inputTokens: 0, outputTokens: 0 },
      },
      timeoutSeconds: 3600,
      generation: 1,
    },
    "node-a",
  );
  if (!paused) throw new Error("the run was not paused");
  await h.drainDispatches();
  const list = await jsonOf<{ items: ApprovalBody[] }>(
    await h.call("GET", `/v1/runs/${runId}/approvals`, { uid }),
  );
  const approvalId = list.items[0]?.approval_id;
  if (approvalId === undefined) throw new Error("no approval listed");
  return { runId, approvalId };
}

/**
 * A decided run waits in line in this file's shared database; cancelled, so the next
 * test's claim (the fair order's head) takes that test's own run.
 */
async function endWaiting(runId: string): Promise<void> {
  expect((await h.call("POST", `/v1/runs/${runId}/cancel`, { uid: ALICE })).status).toBe(202);
  expect((await runOf(ALICE, runId)).status).toBe("cancelled");
}

async function runOf(uid: string, runId: string): Promise<Run> {
  return jsonOf<Run>(await h.call("GET", `/v1/runs/${runId}`, { uid }));
}

describe("approvals over HTTP", () => {
  test("the owner sees the pending call with its exact arguments; the run awaits", async () => {
    const { runId, approvalId } = await pausedRun(ALICE);
    expect((await runOf(ALICE, runId)).status).toBe("awaiting_approval");
    const list = await jsonOf<{ items: ApprovalBody[] }>(
      await h.call("GET", `/v1/runs/${runId}/approvals`, { uid: ALICE }),
    );
    expect(list.items).toEqual([
      {
        approval_id: approvalId,
        run_id: runId,
        kind: "tool",
        status: "pending",
        tool: "bash",
        arguments: COMMAND,
        requested_at: expect.any(String),
        expires_at: expect.any(String),
      },
    ]);
  });

  test("another user can neither see nor decide the approval (404) and nothing changes", async () => {
    const { runId, approvalId } = await pausedRun(ALICE);
    const seen = await h.call("GET", `/v1/runs/${runId}/approvals`, { uid: BOB });
    expect(seen.status).toBe(404);
    const decided = await h.call("POST", `/v1/runs/${runId}/approvals/${approvalId}`, {
      uid: BOB,
      body: { decision: "approve" },
    });
    expect(decided.status).toBe(404);
    expect((await jsonOf<ErrorJson>(decided)).error.code).toBe("not_found");
    expect(await h.drainDispatches()).toEqual([]);
    expect((await runOf(ALICE, runId)).status).toBe("awaiting_approval");
    const list = await jsonOf<{ items: ApprovalBody[] }>(
      await h.call("GET", `/v1/runs/${runId}/approvals`, { uid: ALICE }),
    );
    expect(list.items.map((a) => a.status)).toEqual(["pending"]);
    // An approval id of A's under B's own run is not found either.
    const own = await pausedRun(BOB);
    const crossed = await h.call("POST", `/v1/runs/${own.runId}/approvals/${approvalId}`, {
      uid: BOB,
      body: { decision: "deny" },
    });
    expect(crossed.status).toBe(404);
    expect((await runOf(ALICE, runId)).status).toBe("awaiting_approval");
  });

  test("two concurrent decisions: one 200, one 409; the run is put in line once and the nodes woken, with no queue message", async () => {
    const { runId, approvalId } = await pausedRun(ALICE);
    const path = `/v1/runs/${runId}/approvals/${approvalId}`;
    const wakes: string[] = [];
    const listening = await h.database.sql.listen(RUN_SLOTS_CHANNEL, (payload) => {
      wakes.push(payload);
    });
    const answers = await Promise.all([
      h.call("POST", path, { uid: ALICE, body: { decision: "approve", scope: "run" } }),
      h.call("POST", path, { uid: ALICE, body: { decision: "deny", note: "no" } }),
    ]);
    expect(answers.map((a) => a.status).sort()).toEqual([200, 409]);
    const conflict = answers.find((a) => a.status === 409);
    expect((await jsonOf<ErrorJson>(conflict as Response)).error).toMatchObject({
      code: "conflict",
      details: { reason: "approval_decided" },
    });
    const winner = await jsonOf<ApprovalBody>(answers.find((a) => a.status === 200) as Response);
    expect(["approved", "denied"]).toContain(winner.status);
    expect(winner).toMatchObject({ decided_by: ALICE, decided_at: expect.any(String) });
    expect((await runOf(ALICE, runId)).status).toBe("pending");
    // In line as a delivered dispatch leaves it (any node's fill claims it), so the resume
    // needs no queue message (decision 0173).
    const [line] = await h.database.sql<{ waiting: boolean; dispatched: boolean }[]>`
      select waiting_since is not null as waiting, dispatched_at is not null as dispatched
      from agent_runs where run_id = ${runId}`;
    expect(line).toEqual({ waiting: true, dispatched: true });
    expect(await h.drainDispatches()).toEqual([]);
    await pollUntil(() => wakes.includes(DECISION_NOTIFY_PAYLOAD), {
      what: "the decision's wake on the slots channel",
    });
    await listening.unlisten();
    expect(wakes.filter((w) => w === DECISION_NOTIFY_PAYLOAD)).toHaveLength(1);
    await endWaiting(runId);
  });

  test("deleting the thread cancels a run that awaits approval, and closes the approval", async () => {
    const { runId, approvalId } = await pausedRun(ALICE);
    const run = await runOf(ALICE, runId);
    expect((await h.call("DELETE", `/v1/threads/${run.thread_id}`, { uid: ALICE })).status).toBe(
      204,
    );
    const [row] = await h.database.sql<{ status: string }[]>`
      select status from agent_runs where run_id = ${runId}`;
    expect(row?.status).toBe("cancelled");
    const [approval] = await h.database.sql<{ status: string }[]>`
      select status from run_approvals where approval_id = ${approvalId}`;
    expect(approval?.status).toBe("denied");
    const [last] = await h.database.sql<{ type: string }[]>`
      select type from run_events where run_id = ${runId} order by seq desc limit 1`;
    expect(last?.type).toBe("run.completed");
  });

  test("the workcell_runs_awaiting_approval gauge counts waiting runs at each scrape", async () => {
    const registry = new Registry();
    const metrics = createWorkcellMetrics(registry);
    metrics.countAwaitingOnScrape((signal) => countAwaitingRuns(h.db, signal));
    const scrape = async () => {
      const text = await registry.metrics();
      return Number(/^workcell_runs_awaiting_approval (\d+)$/m.exec(text)?.[1]);
    };
    const before = await scrape();
    const { runId, approvalId } = await pausedRun(ALICE);
    expect(await scrape()).toBe(before + 1);
    await h.call("POST", `/v1/runs/${runId}/approvals/${approvalId}`, {
      uid: ALICE,
      body: { decision: "deny" },
    });
    expect(await h.drainDispatches()).toEqual([]);
    expect(await scrape()).toBe(before);
    await endWaiting(runId);
  });

  test("a bad decision body is 400 and decides nothing", async () => {
    const { runId, approvalId } = await pausedRun(ALICE);
    const path = `/v1/runs/${runId}/approvals/${approvalId}`;
    for (const body of [{ decision: "maybe" }, { decision: "approve", extra: 1 }, {}]) {
      expect((await h.call("POST", path, { uid: ALICE, body })).status).toBe(400);
    }
    expect((await runOf(ALICE, runId)).status).toBe("awaiting_approval");
  });

  test("an admin's per-user policy: set, read back; non-admins are refused", async () => {
    const admin = { authorization: `Bearer ${await h.adminToken("root")}` };
    const path = "/v1/admin/users/carol/approvals";
    expect(await jsonOf<object>(await h.call("GET", path, { headers: admin }))).toEqual({
      uid: "carol",
      policy: { tools: [], max_timeout_seconds: null },
    });
    const put = await h.call("PUT", path, {
      headers: admin,
      body: { tools: ["bash", "write_file", "bash"], max_timeout_seconds: 600 },
    });
    expect(await jsonOf<object>(put)).toEqual({
      uid: "carol",
      policy: { tools: ["bash", "write_file"], max_timeout_seconds: 600 },
    });
    const refused = await h.call("PUT", path, {
      uid: "carol",
      body: { tools: [], max_timeout_seconds: null },
    });
    expect(refused.status).toBe(403);
    expect(await jsonOf<object>(await h.call("GET", path, { headers: admin }))).toMatchObject({
      policy: { tools: ["bash", "write_file"] },
    });
  });
});
