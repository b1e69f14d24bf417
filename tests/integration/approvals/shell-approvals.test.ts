import { sql } from "drizzle-orm";
import { afterEach, beforeEach, expect, it } from "vitest";
import { putApprovalPolicy } from "../../../functions/approvals/approval-policy-store.ts";
import { approvalHash } from "../../../shared/approvals/approval-hash.ts";
import { expireApprovals } from "../../../shared/approvals/expire-approvals.ts";
import { expectGapFree, type RunWorld, runWorld } from "../runs/run-harness.ts";
import { approvalsOf, awaitPause, decide, EFFECT_COMMAND, effectCount } from "./approval-world.ts";

let world: RunWorld;

beforeEach(async () => {
  world = await runWorld();
});
afterEach(async () => {
  await world.cleanup();
});

const ASK_BASH = { approvals: { tools: ["bash"] } };

// docs/architecture.md §14: the command waits for a person, runs exactly once after the
// approval, in a run that holds no node while it waits.
it("approved: the command has not run while awaiting, then runs exactly once", async () => {
  await world.worker();
  const project = await world.project();
  const thread = await world.thread(project);
  const runId = await world.submit(thread, EFFECT_COMMAND, ASK_BASH);

  const approval = await awaitPause(world, runId);
  expect(effectCount(world, project)).toBe(0);
  expect(approval).toMatchObject({
    kind: "tool",
    tool: "bash",
    arguments: { command: EFFECT_COMMAND },
    argumentsHash: approvalHash("bash", { command: EFFECT_COMMAND }),
  });
  // The pause holds no node: no owner, no lease.
  const paused = await world.run(runId);
  expect(paused).toMatchObject({ ownerNode: null, leaseExpiresAt: null });
  const pausedEvents = await world.events(runId);
  expect(pausedEvents.map((e) => e.type)).toEqual(["run.status", "approval.requested"]);
  expect(pausedEvents[1]?.data).toMatchObject({
    approval_id: approval.approvalId,
    status: "pending",
    tool: "bash",
    arguments: { command: EFFECT_COMMAND },
  });

  const decided = await decide(world, project.uid, approval, { decision: "approve" });
  expect(decided).toMatchObject({ status: "approved", decidedBy: project.uid, scope: "once" });
  const run = await world.waitForRun(runId);
  expect(run.status).toBe("succeeded");
  expect(effectCount(world, project)).toBe(1);
  expect(await world.assistantMessages(thread)).toEqual([expect.stringContaining("done")]);

  const events = await world.events(runId);
  expectGapFree(events);
  expect(events.map((e) => e.type)).toEqual([
    "run.status",
    "approval.requested",
    "approval.resolved",
    "run.status",
    "tool.started",
    "tool.output",
    "tool.completed",
    "message.delta",
    "message.completed",
    "run.completed",
  ]);
  expect(events.at(-1)?.data).toEqual({ status: "succeeded", exit_code: 0 });
  const [row] = await approvalsOf(world, runId);
  expect(row?.resumedAttempt).toBe(run.attempt);
});

it("denied: the command never runs and the shell-model run fails approval_denied", async () => {
  await world.worker();
  const project = await world.project();
  const runId = await world.submit(await world.thread(project), EFFECT_COMMAND, ASK_BASH);
  const approval = await awaitPause(world, runId);

  await decide(world, project.uid, approval, { decision: "deny", note: "not today" });
  const run = await world.waitForRun(runId);
  expect(run.status).toBe("failed");
  expect(run.error?.code).toBe("approval_denied");
  expect(run.error?.message).toContain("not today");
  expect(effectCount(world, project)).toBe(0);
  const events = await world.events(runId);
  expectGapFree(events);
  expect(events.find((e) => e.type === "approval.resolved")?.data).toEqual({
    approval_id: approval.approvalId,
    status: "denied",
    decided_by: project.uid,
    note: "not today",
  });
  expect(events.find((e) => e.type === "tool.completed")?.data).toMatchObject({
    is_error: true,
    output: { text: expect.stringContaining(`Denied by ${project.uid}: not today`) },
  });
});

it("expired: the sweeper's expiry is a denial, recorded as expired", async () => {
  await world.worker();
  const project = await world.project();
  const runId = await world.submit(await world.thread(project), EFFECT_COMMAND, ASK_BASH);
  const approval = await awaitPause(world, runId);
  // The wait is over: what a day of nobody deciding leaves behind.
  await world.db.execute(
    sql`update run_approvals set expires_at = now() - interval '1 second' where approval_id = ${approval.approvalId}`,
  );
  // The expiry alone puts the run in line: no queue message is needed for the resume.
  expect(await expireApprovals(world.db, AbortSignal.timeout(10_000))).toEqual([runId]);

  const run = await world.waitForRun(runId);
  expect(run).toMatchObject({ status: "failed", error: { code: "approval_denied" } });
  expect(effectCount(world, project)).toBe(0);
  const [row] = await approvalsOf(world, runId);
  expect(row).toMatchObject({ status: "expired", decidedBy: null });
  // Expired once: a second pass finds nothing, a late decision is a conflict.
  expect(await expireApprovals(world.db, AbortSignal.timeout(10_000))).toEqual([]);
  await expect(decide(world, project.uid, approval, { decision: "approve" })).rejects.toMatchObject(
    { code: "conflict" },
  );
  expect(effectCount(world, project)).toBe(0);
});

it("tampered arguments: the resume refuses the call and fails the run approval_mismatch", async () => {
  await world.worker();
  const project = await world.project();
  const runId = await world.submit(await world.thread(project), EFFECT_COMMAND, ASK_BASH);
  const approval = await awaitPause(world, runId);
  // What the person sees stays; the call to resume is swapped for another command.
  await world.db.execute(
    sql`update run_approvals
        set resume_state = jsonb_set(resume_state, '{pendingCalls,0,arguments}',
                                     to_jsonb(${JSON.stringify({ command: `${EFFECT_COMMAND}; ${EFFECT_COMMAND}` })}::text))
        where approval_id = ${approval.approvalId}`,
  );
  await decide(world, project.uid, approval, { decision: "approve" });
  const run = await world.waitForRun(runId);
  expect(run).toMatchObject({ status: "failed", error: { code: "approval_mismatch" } });
  expect(effectCount(world, project)).toBe(0);
});

it("tampered shown arguments: an approval of other arguments than the call's is refused", async () => {
  await world.worker();
  const project = await world.project();
  const runId = await world.submit(await world.thread(project), EFFECT_COMMAND, ASK_BASH);
  const approval = await awaitPause(world, runId);
  await world.db.execute(
    sql`update run_approvals set arguments = '{"command":"true"}'::jsonb where approval_id = ${approval.approvalId}`,
  );
  await decide(world, project.uid, approval, { decision: "approve" });
  const run = await world.waitForRun(runId);
  expect(run).toMatchObject({ status: "failed", error: { code: "approval_mismatch" } });
  expect(effectCount(world, project)).toBe(0);
});

it("an admin's per-user policy asks even when the run does not, and caps the run's wait", async () => {
  await world.worker();
  const project = await world.project();
  await putApprovalPolicy(world.db, project.uid, { tools: ["bash"], max_timeout_seconds: 60 });
  const runId = await world.submit(await world.thread(project), EFFECT_COMMAND, {
    approvals: { tools: [], timeout_seconds: 3600 },
  });
  const approval = await awaitPause(world, runId);
  expect(effectCount(world, project)).toBe(0);
  // Both stamped by the pausing transaction's now(): the wait is exactly the admin's cap.
  expect(approval.expiresAt.getTime() - approval.requestedAt.getTime()).toBe(60_000);
  await decide(world, project.uid, approval, { decision: "approve" });
  expect((await world.waitForRun(runId)).status).toBe("succeeded");
  expect(effectCount(world, project)).toBe(1);
});

it("a run without a policy never asks", async () => {
  await world.worker();
  const project = await world.project();
  const runId = await world.submit(await world.thread(project), EFFECT_COMMAND);
  expect((await world.waitForRun(runId)).status).toBe("succeeded");
  expect(effectCount(world, project)).toBe(1);
  expect(await approvalsOf(world, runId)).toEqual([]);
});
