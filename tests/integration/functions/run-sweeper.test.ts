import { asc, eq, sql } from "drizzle-orm";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { SWEEPER_LOCK_KEYS } from "../../../functions/runs/dispatch-sweeper.ts";
import { sweepRuns } from "../../../functions/runs/sweep-runs.ts";
import { runSweeperLoop } from "../../../functions/runs/sweeper-loop.ts";
import type { Run } from "../../../shared/contracts/run.ts";
import { agentRuns, nodes, runEvents, sandboxes } from "../../../shared/db/schema.ts";
import { sandboxId } from "../../../shared/identity/sandbox-id.ts";
import { pollUntil } from "../../support/poll-until.ts";
import {
  ALICE,
  type FunctionsHarness,
  jsonOf,
  startFunctionsHarness,
} from "./support/functions-harness.ts";
import { readSse } from "./support/sse.ts";

// The control plane's sweep over run state (functions/runs/sweep-runs.ts): a run whose
// node died (lease expired) ends failed/node_lost with its run.completed event and its
// sandbox row goes to the reconciler; a healthy running run is untouched; pending runs
// whose message was lost are re-dispatched in the same sweep. Runs are claimed here the
// way agent-host's claim (claimWaitingRun) writes them (status, attempt, owner, lease, started_at).

const logger = pino({ level: "silent" });
const DEAD_NODE = "node-dead";
const LIVE_NODE = "node-live";
let h: FunctionsHarness;

beforeAll(async () => {
  h = await startFunctionsHarness();
  await h.db.insert(nodes).values([
    { nodeId: DEAD_NODE, dataPlaneUrl: "http://dead.invalid" },
    { nodeId: LIVE_NODE, dataPlaneUrl: "http://live.invalid" },
  ]);
});
afterAll(async () => {
  await h?.close();
});

const sweep = () =>
  sweepRuns({ db: h.db, runQueue: h.deps.runQueue, logger }, AbortSignal.timeout(10_000));

async function submit(input: string): Promise<Run> {
  const res = await h.call("POST", "/v1/runs", { body: { input } });
  expect(res.status).toBe(202);
  return (await jsonOf<{ run: Run }>(res)).run;
}

/** Claims `run` for `nodeId` with a lease `leaseSeconds` from now (negative: expired), plus events 1..`events`. */
async function claimed(run: Run, nodeId: string, leaseSeconds: number, events: number) {
  await h.db
    .update(agentRuns)
    .set({
      status: "running",
      attempt: 1,
      ownerNode: nodeId,
      leaseExpiresAt: sql`now() + make_interval(secs => ${leaseSeconds})`,
      startedAt: sql`now()`,
    })
    .where(eq(agentRuns.runId, run.run_id));
  for (let seq = 1; seq <= events; seq++) {
    await h.db.insert(runEvents).values({
      runId: run.run_id,
      uid: ALICE,
      seq,
      type: seq === 1 ? "run.status" : "message.delta",
      data: seq === 1 ? { status: "running" } : { text: `part ${seq}` },
    });
  }
  const [sandbox] = await h.db
    .insert(sandboxes)
    .values({
      sandboxId: sandboxId(ALICE, run.thread_id),
      uid: ALICE,
      runtimeScopeId: run.thread_id,
      workdirPath: "projects/00000000-0000-4000-8000-000000000000",
      nodeId,
      state: "running",
      instanceId: `c-${run.run_id}`,
    })
    .returning();
  if (sandbox === undefined) throw new Error("no sandbox row");
  return sandbox;
}

async function row(runId: string) {
  const [r] = await h.db.select().from(agentRuns).where(eq(agentRuns.runId, runId));
  if (r === undefined) throw new Error(`no run ${runId}`);
  return r;
}

async function eventsOf(runId: string) {
  return h.db
    .select({ seq: runEvents.seq, type: runEvents.type, data: runEvents.data })
    .from(runEvents)
    .where(eq(runEvents.runId, runId))
    .orderBy(asc(runEvents.seq));
}

async function sandboxState(threadId: string) {
  const [s] = await h.db
    .select({ state: sandboxes.state })
    .from(sandboxes)
    .where(eq(sandboxes.sandboxId, sandboxId(ALICE, threadId)));
  return s?.state;
}

describe("run sweep", () => {
  test("ends a dead node's run failed/node_lost, releases its sandbox, leaves a live run alone, re-dispatches a lost one", async () => {
    const dead = await submit("on a node that died");
    const live = await submit("on a healthy node");
    const lost = await submit("message lost");
    await h.drainDispatches();
    const deadSandbox = await claimed(dead, DEAD_NODE, -1, 2);
    await claimed(live, LIVE_NODE, 3_600, 1);
    const liveBefore = await row(live.run_id);
    await h.db
      .update(agentRuns)
      .set({ dispatchedAt: null })
      .where(eq(agentRuns.runId, lost.run_id));

    const result = await sweep();
    expect(result).toEqual({
      lostNodes: { scopes: [], releasedSandboxes: [] },
      nodeLost: [
        {
          uid: ALICE,
          runtimeScopeId: dead.thread_id,
          sandboxId: sandboxId(ALICE, dead.thread_id),
          runIds: [dead.run_id],
          releasedSandbox: { generation: deadSandbox.generation, nodeId: DEAD_NODE },
        },
      ],
      expiredApprovals: [],
      dispatch: { ran: true, sent: [lost.run_id], failed: [] },
    });
    expect(await h.drainDispatches()).toEqual([lost.run_id]);

    // The dead node's run: failed/node_lost, its run.completed the last of gap-free events.
    const ended = await row(dead.run_id);
    expect(ended).toMatchObject({ status: "failed", error: { code: "node_lost" } });
    expect(ended.finishedAt).not.toBeNull();
    const events = await eventsOf(dead.run_id);
    expect(events.map((e) => e.seq)).toEqual([1, 2, 3]);
    expect(events.at(-1)).toMatchObject({
      type: "run.completed",
      data: { status: "failed", error: { code: "node_lost" } },
    });
    // The reconciler of the dead node removes what is no longer `running`.
    expect(await sandboxState(dead.thread_id)).toBe("failed");

    // What clients see: the API's run and an event stream that ends after run.completed.
    const api = await jsonOf<Run>(await h.call("GET", `/v1/runs/${dead.run_id}`));
    expect(api).toMatchObject({ status: "failed", error: { code: "node_lost" } });
    const res = await h.call("GET", `/v1/runs/${dead.run_id}/events`);
    if (res.body === null) throw new Error("no event stream");
    const { frames, ended: streamEnded } = await readSse(res.body);
    expect(streamEnded).toBe(true);
    expect(frames.filter((f) => f.id !== undefined).map((f) => [f.id, f.event])).toEqual([
      ["1", "run.status"],
      ["2", "message.delta"],
      ["3", "run.completed"],
    ]);

    // The healthy run: same row (attempt, lease, owner), same events, sandbox still running.
    expect(await row(live.run_id)).toEqual(liveBefore);
    expect((await eventsOf(live.run_id)).map((e) => e.seq)).toEqual([1]);
    expect(await sandboxState(live.thread_id)).toBe("running");

    // Ended once: the next sweep finds nothing to do.
    expect(await sweep()).toEqual({
      lostNodes: { scopes: [], releasedSandboxes: [] },
      nodeLost: [],
      expiredApprovals: [],
      dispatch: { ran: true, sent: [], failed: [] },
    });
    expect((await eventsOf(dead.run_id)).length).toBe(3);
  });

  test("expired leases are swept even while another sweeper holds the dispatch lock", async () => {
    // The dispatch step's single-instance lock does not gate lease expiry: ending a run is
    // decided under its scope's tree lock, so a second sweeper holding the dispatch lock
    // (or a slow one) cannot keep a dead node's runs alive.
    const run = await submit("lock held elsewhere");
    await h.drainDispatches();
    await claimed(run, DEAD_NODE, -1, 0);
    const [classId, objId] = SWEEPER_LOCK_KEYS;
    const holder = await h.database.sql.reserve();
    try {
      await holder`select pg_advisory_lock(${classId}::int, ${objId}::int)`;
      const result = await sweep();
      expect(result.dispatch).toEqual({ ran: false, reason: "another sweeper holds the lock" });
      expect(result.nodeLost.map((s) => s.runIds)).toEqual([[run.run_id]]);
      await holder`select pg_advisory_unlock(${classId}::int, ${objId}::int)`;
    } finally {
      holder.release();
    }
    expect((await eventsOf(run.run_id)).map((e) => [e.seq, e.type])).toEqual([
      [1, "run.completed"],
    ]);
  });

  test("runSweeperLoop (Node entry, local Workcell) ends expired leases on its own", async () => {
    const run = await submit("loop");
    await h.drainDispatches();
    await claimed(run, DEAD_NODE, -1, 1);
    const stop = new AbortController();
    const loop = runSweeperLoop({ db: h.db, runQueue: h.deps.runQueue, logger }, stop.signal, 50);
    try {
      await pollUntil(async () => (await row(run.run_id)).status !== "running", {
        what: "the sweeper loop to end the run",
        timeoutMs: 10_000,
        intervalMs: 50,
      });
    } finally {
      stop.abort();
      await loop;
    }
    expect(await row(run.run_id)).toMatchObject({ status: "failed", error: { code: "node_lost" } });
    expect((await eventsOf(run.run_id)).map((e) => e.seq)).toEqual([1, 2]);
  });
});

describe("lost nodes", () => {
  test("a node past the node TTL: its runs end node_lost and ALL its sandbox rows are released, even with a sibling run of the scope running elsewhere", async () => {
    const gone = `node-gone-${crypto.randomUUID()}`;
    const stopped = `node-stopped-${crypto.randomUUID()}`;
    await h.db.insert(nodes).values([
      // Silent for a minute: past the 30 s TTL. Its runs' leases are still valid.
      {
        nodeId: gone,
        dataPlaneUrl: "http://gone.invalid",
        heartbeatAt: sql`now() - interval '60 seconds'`,
      },
      // Stopped cleanly a moment ago: lost at once, no TTL to wait for.
      { nodeId: stopped, dataPlaneUrl: "http://stopped.invalid", stoppedAt: sql`now()` },
    ]);
    const onGone = await submit("on the lost node");
    const warmGone = await submit("warm sandbox of the lost node");
    const onStopped = await submit("on the stopped node");
    const onLive = await submit("on a healthy node");
    await h.drainDispatches();
    await claimed(onGone, gone, 3_600, 1);
    await claimed(onStopped, stopped, 3_600, 0);
    await claimed(onLive, LIVE_NODE, 3_600, 0);
    // A second run of the lost node's scope, claimed by a live node (it would be handed
    // back with sandbox_on_other_node for as long as the row names the lost node).
    const sibling = await h.call("POST", `/v1/threads/${onGone.thread_id}/runs`, {
      body: { input: "sibling" },
    });
    const siblingRun = (await jsonOf<Run>(sibling)).run_id;
    await h.drainDispatches();
    await h.db
      .update(agentRuns)
      .set({
        status: "running",
        attempt: 1,
        ownerNode: LIVE_NODE,
        leaseExpiresAt: sql`now() + interval '1 hour'`,
        startedAt: sql`now()`,
      })
      .where(eq(agentRuns.runId, siblingRun));
    // The warm one: a sandbox row of the lost node with no run at all.
    await claimed(warmGone, gone, 3_600, 0);
    await h.db
      .update(agentRuns)
      .set({ status: "succeeded", finishedAt: sql`now()` })
      .where(eq(agentRuns.runId, warmGone.run_id));

    const result = await sweep();
    expect(new Set(result.lostNodes.scopes.map((s) => s.runIds[0]))).toEqual(
      new Set([onGone.run_id, onStopped.run_id]),
    );
    // The scopes' rows go with their runs (the sibling on another node does not keep it);
    // the warm row, which no run names, goes in the node-wide release.
    for (const scope of result.lostNodes.scopes) expect(scope.releasedSandbox).not.toBeNull();
    expect(result.lostNodes.releasedSandboxes).toEqual([
      expect.objectContaining({ sandboxId: sandboxId(ALICE, warmGone.thread_id), nodeId: gone }),
    ]);
    for (const run of [onGone, onStopped]) {
      expect(await row(run.run_id)).toMatchObject({
        status: "failed",
        error: { code: "node_lost" },
      });
      expect((await eventsOf(run.run_id)).at(-1)).toMatchObject({ type: "run.completed" });
    }
    for (const run of [onGone, warmGone, onStopped]) {
      expect(await sandboxState(run.thread_id)).toBe("failed");
    }
    // Nothing of the healthy node changed: its run, the sibling it claimed, its sandbox.
    expect((await row(onLive.run_id)).status).toBe("running");
    expect((await row(siblingRun)).status).toBe("running");
    expect(await sandboxState(onLive.thread_id)).toBe("running");

    // Once: a second sweep finds nothing more of the lost nodes.
    const again = await sweep();
    expect(again.lostNodes).toEqual({ scopes: [], releasedSandboxes: [] });
  });

  test("a node that beats again in time keeps its runs and sandboxes", async () => {
    const slow = `node-slow-${crypto.randomUUID()}`;
    await h.db.insert(nodes).values({
      nodeId: slow,
      dataPlaneUrl: "http://slow.invalid",
      heartbeatAt: sql`now() - interval '20 seconds'`,
    });
    const run = await submit("on a slow but alive node");
    await h.drainDispatches();
    await claimed(run, slow, 3_600, 0);
    const result = await sweep();
    expect(result.lostNodes).toEqual({ scopes: [], releasedSandboxes: [] });
    expect((await row(run.run_id)).status).toBe("running");
    expect(await sandboxState(run.thread_id)).toBe("running");
  });
});
