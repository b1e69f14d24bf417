import { randomUUID } from "node:crypto";
import {
  GetQueueAttributesCommand,
  ReceiveMessageCommand,
  SendMessageCommand,
} from "@aws-sdk/client-sqs";
import { afterEach, beforeEach, expect, it } from "vitest";
import type { SkillsRefreshMessage } from "../../../shared/contracts/queue-message.ts";
import { pollUntil } from "../../support/poll-until.ts";
import { expectGapFree, type RunWorld, runWorld } from "./run-harness.ts";

let world: RunWorld;

beforeEach(async () => {
  world = await runWorld();
});
afterEach(async () => {
  await world.cleanup();
});

async function send(body: string): Promise<void> {
  await world.sqs.send(new SendMessageCommand({ QueueUrl: world.queueUrl, MessageBody: body }));
}

async function queueDepth(queueUrl: string): Promise<number> {
  const out = await world.sqs.send(
    new GetQueueAttributesCommand({
      QueueUrl: queueUrl,
      AttributeNames: ["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
    }),
  );
  return (
    Number(out.Attributes?.ApproximateNumberOfMessages ?? 0) +
    Number(out.Attributes?.ApproximateNumberOfMessagesNotVisible ?? 0)
  );
}

function until(check: () => Promise<boolean>, what: string): Promise<void> {
  return pollUntil(check, { what, timeoutMs: 20_000, intervalMs: 100 });
}

it("garbage is dead-lettered; dispatches of unknown or finished runs are dropped without effect", async () => {
  const refreshed: SkillsRefreshMessage[] = [];
  await world.worker({
    extra: {
      skillsRefresh: async (message) => {
        refreshed.push(message);
      },
    },
  });
  const thread = await world.thread(await world.project());
  const done = await world.submit(thread, "echo once");
  const finished = await world.waitForRun(done);
  expect(finished.status).toBe("succeeded");

  await send("not json at all");
  await send(JSON.stringify({ type: "run.dispatch", run_id: "not-a-uuid" }));
  await send(JSON.stringify({ type: "run.dispatch", run_id: randomUUID() }));
  await world.dispatch(done);
  await send(JSON.stringify({ type: "skills.refresh", uid: "someone" }));

  await until(async () => (await queueDepth(world.queueUrl)) === 0, "the queue to drain");
  await until(async () => (await queueDepth(world.dlqUrl)) === 2, "two dead letters");
  const dead = await world.sqs.send(
    new ReceiveMessageCommand({
      QueueUrl: world.dlqUrl,
      MaxNumberOfMessages: 10,
      MessageAttributeNames: ["All"],
    }),
  );
  expect(dead.Messages?.map((m) => m.Body).sort()).toEqual(
    ["not json at all", JSON.stringify({ type: "run.dispatch", run_id: "not-a-uuid" })].sort(),
  );
  expect(dead.Messages?.[0]?.MessageAttributes?.error_code?.StringValue).toBe("invalid_request");
  // The finished run was not touched by its second dispatch.
  expect(await world.run(done)).toEqual(finished);
  expect(refreshed).toEqual([{ type: "skills.refresh", uid: "someone" }]);
});

it("stop() lets a run in flight finish", async () => {
  const worker = await world.worker();
  const thread = await world.thread(await world.project());
  const runId = await world.submit(thread, "sleep 1; echo finished");
  await world.waitForEvent(runId, "tool.started");
  await worker.stop();
  const run = await world.run(runId);
  expect(run.status).toBe("succeeded");
  expect(await world.assistantMessages(thread)).toEqual(["finished\n"]);
  await world.waitForNoContainers();
});

it("stop() past its grace period ends the run failed/node_shutdown", async () => {
  const worker = await world.worker({ limits: { stopGraceMs: 300 } });
  const thread = await world.thread(await world.project());
  const runId = await world.submit(thread, "sleep 3134");
  await world.waitForEvent(runId, "tool.started");
  await worker.stop();
  const run = await world.run(runId);
  expect(run).toMatchObject({ status: "failed", error: { code: "node_shutdown" } });
  expectGapFree(await world.events(runId));
  await world.waitForNoContainers();
});

it("a quiesced node leaves runs waiting untouched; they run once the node is active again", async () => {
  await world.sandboxManager.quiesce(AbortSignal.timeout(30_000));
  await world.worker({ limits: { handBackDelaySeconds: 1, waitingPollMs: 200 } });
  const thread = await world.thread(await world.project());
  const runId = await world.submit(thread, "echo after resume");
  // Its message was taken: the run waits in Postgres, never claimed by the quiesced node.
  const waiting = await world.waitForRun(runId, (run) => run.waitingSince !== null);
  expect(waiting).toMatchObject({ status: "pending", attempt: 0 });
  expect(await world.events(runId)).toEqual([]);

  await world.sandboxManager.resume(AbortSignal.timeout(30_000));
  const run = await world.waitForRun(runId);
  expect(run.status).toBe("succeeded");
  expect(run.attempt).toBe(1);
  expectGapFree(await world.events(runId));
  expect(await world.assistantMessages(thread)).toEqual(["after resume\n"]);
});
