import { eq, sql } from "drizzle-orm";
import { afterAll, beforeAll, expect, test } from "vitest";
import {
  type CompleteLifecycleAction,
  type DrainOutcome,
  drainNode,
  type LifecycleEvent,
  lifecycleEventSchema,
} from "../../../functions/nodes/drain-node.ts";
import { createDb } from "../../../shared/db/client.ts";
import { nodes } from "../../../shared/db/schema.ts";
import { DEFAULT_NODE_TTL_SECONDS } from "../../../shared/env/liveness-env.ts";
import { captureLogs } from "../../support/log-capture.ts";
import { pollUntil } from "../../support/poll-until.ts";
import { freshDatabase, type TestDatabase } from "../../support/postgres.ts";
import { testLogger } from "../../support/test-logger.ts";

// The drainer (decision 0108) against real Postgres: a node the Auto Scaling group is
// terminating is quiesced (the admin route's state change), the drainer waits until the
// node's heartbeat reports no run and no sandbox, then completes the lifecycle action.
// The lifecycle action itself is AWS's: a recorder stands in for CompleteLifecycleAction.

let database: TestDatabase;
let db: ReturnType<typeof createDb>;
const BYSTANDER = "i-0bbbbbbbbbbbbbbbb";

beforeAll(async () => {
  database = await freshDatabase();
  db = createDb(database.sql);
  await db.insert(nodes).values({ nodeId: BYSTANDER, dataPlaneUrl: "http://bystander.invalid" });
});
afterAll(async () => {
  await database?.drop();
});

function event(instanceId: string): LifecycleEvent {
  return lifecycleEventSchema.parse({
    version: "0",
    "detail-type": "EC2 Instance-terminate Lifecycle Action",
    source: "aws.autoscaling",
    detail: {
      LifecycleActionToken: `token-${instanceId}`,
      AutoScalingGroupName: "workcell-prod-Nodes",
      LifecycleHookName: "workcell-prod-NodeDrain",
      EC2InstanceId: instanceId,
      LifecycleTransition: "autoscaling:EC2_INSTANCE_TERMINATING",
    },
  });
}

function recorder() {
  const calls: Parameters<CompleteLifecycleAction>[0][] = [];
  const complete: CompleteLifecycleAction = async (action, signal) => {
    expect(signal.aborted).toBe(false);
    calls.push(action);
  };
  return { calls, complete };
}

const deps = (complete: CompleteLifecycleAction, logger = testLogger()) => ({
  db,
  nodeTtlMs: DEFAULT_NODE_TTL_SECONDS * 1000,
  logger,
  completeLifecycleAction: complete,
  pollMs: 20,
});

async function stateOf(nodeId: string) {
  const [row] = await db.select({ state: nodes.state }).from(nodes).where(eq(nodes.nodeId, nodeId));
  return row?.state;
}

async function busyNode(nodeId: string): Promise<void> {
  await db
    .insert(nodes)
    .values({ nodeId, dataPlaneUrl: "https://dp.example.com", runningRuns: 2, liveSandboxes: 1 });
}

test("a busy node is quiesced, waited for until its heartbeat reports it empty, then released", async () => {
  const node = "i-0aaaaaaaaaaaaaaa1";
  await busyNode(node);
  const { calls, complete } = recorder();
  const { logger, lines } = captureLogs("debug");
  let outcome: DrainOutcome | undefined;
  const drained = drainNode(deps(complete, logger), event(node), AbortSignal.timeout(60_000)).then(
    (o) => {
      outcome = o;
    },
  );
  await pollUntil(async () => (await stateOf(node)) === "quiesced");
  // One run left, no sandbox: the drainer reads it and keeps the group waiting.
  await db.update(nodes).set({ runningRuns: 1, liveSandboxes: 0 }).where(eq(nodes.nodeId, node));
  await pollUntil(async () =>
    lines.some(
      (l) => l.msg === "node still draining" && l.running_runs === 1 && l.live_sandboxes === 0,
    ),
  );
  expect(outcome).toBeUndefined();
  expect(calls).toEqual([]);
  // The node's heartbeat after its last run ended.
  await db.update(nodes).set({ runningRuns: 0 }).where(eq(nodes.nodeId, node));
  await drained;
  expect(outcome).toBe("drained");
  expect(calls).toEqual([
    {
      AutoScalingGroupName: "workcell-prod-Nodes",
      LifecycleHookName: "workcell-prod-NodeDrain",
      LifecycleActionToken: `token-${node}`,
      InstanceId: node,
      LifecycleActionResult: "CONTINUE",
    },
  ]);
  expect(await stateOf(BYSTANDER)).toBe("active");
});

test("the drain is bounded: a node still busy when the budget ends is released anyway", async () => {
  const node = "i-0aaaaaaaaaaaaaaa2";
  await busyNode(node);
  const { calls, complete } = recorder();
  const budget = new AbortController();
  const drained = drainNode(deps(complete), event(node), budget.signal);
  await pollUntil(async () => (await stateOf(node)) === "quiesced");
  budget.abort();
  expect(await drained).toBe("budget_spent");
  expect(calls.map((c) => [c.InstanceId, c.LifecycleActionResult])).toEqual([[node, "CONTINUE"]]);
});

test("a node that stopped heartbeating is released at once as lost", async () => {
  const node = "i-0aaaaaaaaaaaaaaa3";
  await busyNode(node);
  await db
    .update(nodes)
    .set({ heartbeatAt: sql`now() - interval '1 hour'` })
    .where(eq(nodes.nodeId, node));
  const { calls, complete } = recorder();
  expect(await drainNode(deps(complete), event(node), AbortSignal.timeout(60_000))).toBe("lost");
  expect(calls).toHaveLength(1);
});

test("an instance that never registered (a failed boot) is released without creating a node", async () => {
  const node = "i-0aaaaaaaaaaaaaaa4";
  const { calls, complete } = recorder();
  expect(await drainNode(deps(complete), event(node), AbortSignal.timeout(60_000))).toBe(
    "unknown_node",
  );
  expect(calls).toHaveLength(1);
  expect(await stateOf(node)).toBeUndefined();
  expect(await stateOf(BYSTANDER)).toBe("active");
});

test("an event that is not a termination of an instance is refused before anything changes", () => {
  const base = event("i-0aaaaaaaaaaaaaaa5");
  for (const detail of [
    { ...base.detail, LifecycleTransition: "autoscaling:EC2_INSTANCE_LAUNCHING" },
    { ...base.detail, EC2InstanceId: BYSTANDER.replace("i-", "node-") },
    { ...base.detail, EC2InstanceId: "i-0abc'; drop table nodes; --" },
    { ...base.detail, LifecycleActionToken: "" },
  ]) {
    expect(lifecycleEventSchema.safeParse({ detail }).success).toBe(false);
  }
});
