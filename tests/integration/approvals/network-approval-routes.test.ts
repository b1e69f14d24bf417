import { asc, eq } from "drizzle-orm";
import { describe, expect, test } from "vitest";
import { createNetworkAsk } from "../../../agent-host/approvals/network-approvals.ts";
import { nextEventSeq, RunEventLog } from "../../../agent-host/runs/claim/run-event-log.ts";
import type { ApprovalBody } from "../../../shared/contracts/approval.ts";
import type { Run } from "../../../shared/contracts/run.ts";
import { nodes, runEvents } from "../../../shared/db/schema.ts";
import { claimParkedRun } from "../../support/claim-parked-run.ts";
import { pollFor } from "../../support/poll-until.ts";
import { ALICE, BOB, type ErrorJson, jsonOf } from "../functions/support/functions-harness.ts";
import { functionsHarnessForFile } from "../functions/support/functions-harness-for-file.ts";
import { silentLogger } from "../sandbox/sandbox-fixture.ts";

// A network approval decided over HTTP (decision 0137): the run is claimed the production
// way and asks through the worker's own createNetworkAsk with the run's event log; the
// decision goes through the app. The run never stops running, the route dispatches nothing,
// and approval.resolved is appended by the worker's log (the route writes no event: a seq
// beside a running worker's would end its run as lease_lost).

const h = functionsHarnessForFile();

async function askingRun(uid: string) {
  const submitted = await jsonOf<{ run: Run }>(
    await h.call("POST", "/v1/runs", {
      uid,
      body: { input: "curl", agent: { approvals: { network: true } } },
    }),
  );
  const runId = submitted.run.run_id;
  await h.db
    .insert(nodes)
    .values({ nodeId: "node-a", dataPlaneUrl: "http://127.0.0.1:1" })
    .onConflictDoNothing();
  const claim = await claimParkedRun(h.db, { runId, nodeId: "node-a", leaseTtlMs: 60_000 });
  if (!claim.ok) throw new Error("the run was not claimed");
  await h.drainDispatches();
  const log = new RunEventLog({
    db: h.db,
    fence: claim.fence,
    nextSeq: await nextEventSeq(h.db, runId),
  });
  const { ask } = createNetworkAsk({
    db: h.db,
    runId,
    uid,
    generation: 1,
    timeoutSeconds: 3600,
    emit: (type, data) => log.append({ type, data }),
    logger: silentLogger,
    dbTimeoutMs: 10_000,
    pollMs: 50,
  });
  return { runId, ask, log };
}

const listOf = async (uid: string, runId: string) =>
  (
    await jsonOf<{ items: ApprovalBody[] }>(
      await h.call("GET", `/v1/runs/${runId}/approvals`, { uid }),
    )
  ).items;

describe("network approvals over HTTP", () => {
  test("the owner approves for the run: the connection is let through, the run kept running, nothing dispatched, the same host passes again without asking; another user gets 404", async () => {
    const { runId, ask, log } = await askingRun(ALICE);
    const answer = ask("api.example.com", 443, new AbortController().signal);
    const items = await pollFor(
      () => listOf(ALICE, runId),
      (list) => list.length === 1,
      { what: "the pending approval", intervalMs: 50 },
    );
    expect(items).toEqual([
      {
        approval_id: expect.any(String),
        run_id: runId,
        kind: "network",
        status: "pending",
        host: "api.example.com",
        port: 443,
        requested_at: expect.any(String),
        expires_at: expect.any(String),
      },
    ]);
    const path = `/v1/runs/${runId}/approvals/${items[0]?.approval_id}`;
    const foreign = await h.call("POST", path, { uid: BOB, body: { decision: "approve" } });
    expect(foreign.status).toBe(404);
    expect((await jsonOf<ErrorJson>(foreign)).error.code).toBe("not_found");
    expect((await h.call("GET", `/v1/runs/${runId}/approvals`, { uid: BOB })).status).toBe(404);

    const decided = await h.call("POST", path, {
      uid: ALICE,
      body: { decision: "approve", scope: "run" },
    });
    expect(decided.status).toBe(200);
    await expect(answer).resolves.toEqual({ approved: true });
    expect(await h.drainDispatches()).toEqual([]);
    const run = await jsonOf<Run>(await h.call("GET", `/v1/runs/${runId}`, { uid: ALICE }));
    expect(run.status).toBe("running");
    await expect(ask("api.example.com", 443, new AbortController().signal)).resolves.toEqual({
      approved: true,
    });
    await log.settled();
    // The run is live: its events read from the table (the route would stream them).
    const events = await h.db
      .select({ type: runEvents.type, data: runEvents.data })
      .from(runEvents)
      .where(eq(runEvents.runId, runId))
      .orderBy(asc(runEvents.seq));
    expect(
      events
        .filter((e) => e.type.startsWith("approval."))
        .map((e) => [e.type, (e.data as { status?: string }).status]),
    ).toEqual([
      ["approval.requested", "pending"],
      ["approval.resolved", "approved"],
    ]);
    expect(log.lost).toBe(false);
    expect((await listOf(ALICE, runId)).length).toBe(1);
  });

  test("denied over HTTP: the connection is refused with the person's note; a second decision is 409", async () => {
    const { runId, ask } = await askingRun(ALICE);
    const answer = ask("upload.example.net", 80, new AbortController().signal);
    const [pending] = await pollFor(
      () => listOf(ALICE, runId),
      (list) => list.length === 1,
      { what: "the pending approval", intervalMs: 50 },
    );
    const path = `/v1/runs/${runId}/approvals/${pending?.approval_id}`;
    const denied = await h.call("POST", path, {
      uid: ALICE,
      body: { decision: "deny", note: "no uploads" },
    });
    expect(denied.status).toBe(200);
    await expect(answer).resolves.toEqual({
      approved: false,
      reason: "approval_denied",
      note: `Denied by ${ALICE}: no uploads.`,
    });
    const again = await h.call("POST", path, { uid: ALICE, body: { decision: "approve" } });
    expect(again.status).toBe(409);
    expect(await h.drainDispatches()).toEqual([]);
  });
});
