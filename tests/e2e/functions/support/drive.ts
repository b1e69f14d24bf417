import { ReceiveMessageCommand, type SQSClient } from "@aws-sdk/client-sqs";
import { expect } from "vitest";
import type { Run } from "../../../../shared/contracts/run.ts";
import type { Thread } from "../../../../shared/contracts/thread.ts";
import type { TestDatabase } from "../../../support/postgres.ts";

/**
 * What a user does with a deployed control plane, over real HTTP: a thread, a run in it,
 * the run on the queue, its events live over SSE until the end. `database` plays the run
 * worker (it writes the run's events as issue 6's worker will).
 */
export async function driveThreadAndRun(p: {
  url: string;
  token: string;
  database: TestDatabase;
  sqs: SQSClient;
  queueUrl: string;
}): Promise<void> {
  const headers = { authorization: `Bearer ${p.token}`, "content-type": "application/json" };
  const created = await fetch(`${p.url}/v1/threads`, {
    method: "POST",
    headers,
    body: JSON.stringify({ title: "e2e" }),
  });
  expect(created.status).toBe(201);
  const thread = (await created.json()) as Thread;

  const submitted = await fetch(`${p.url}/v1/threads/${thread.thread_id}/runs`, {
    method: "POST",
    headers: { ...headers, "idempotency-key": crypto.randomUUID() },
    body: JSON.stringify({ input: "echo hello" }),
  });
  expect(submitted.status).toBe(202);
  const run = (await submitted.json()) as Run;
  expect(run).toMatchObject({ status: "pending", runtime_scope_id: thread.thread_id });
  expect(await receiveRunIds(p.sqs, p.queueUrl, 1)).toEqual([run.run_id]);

  const events = await fetch(`${p.url}/v1/runs/${run.run_id}/events`, { headers });
  expect(events.status).toBe(200);
  expect(events.headers.get("content-type")).toMatch(/^text\/event-stream/);
  const reading = readAll(events.body as ReadableStream<Uint8Array>);
  for (const [type, data] of [
    ["run.status", { status: "running" }],
    ["message.delta", { text: "hello" }],
    ["run.completed", { status: "succeeded" }],
  ] as const) {
    await new Promise((resolve) => setTimeout(resolve, 150));
    await p.database.sql.begin(async (tx) => {
      await tx`insert into run_events (run_id, uid, seq, type, data)
        select run_id, uid, coalesce((select max(seq) from run_events where run_id = ${run.run_id}), 0) + 1,
          ${type}, ${JSON.stringify(data)}::jsonb from agent_runs where run_id = ${run.run_id}`;
      await tx`select pg_notify('workcell_run_events', ${run.run_id})`;
    });
  }
  const text = await reading;
  const ids = [...text.matchAll(/^id: (\d+)$/gm)].map((m) => m[1]);
  expect(ids).toEqual(["1", "2", "3"]);
  expect(text).toContain("event: run.completed");

  const fetched = await fetch(`${p.url}/v1/runs/${run.run_id}`, { headers });
  expect(((await fetched.json()) as Run).run_id).toBe(run.run_id);
  const other = await fetch(`${p.url}/v1/runs/${run.run_id}`, {
    headers: { authorization: "Bearer nope" },
  });
  expect(other.status).toBe(401);
}

async function readAll(body: ReadableStream<Uint8Array>): Promise<string> {
  let text = "";
  for await (const chunk of body.pipeThrough(new TextDecoderStream())) text += chunk;
  return text;
}

/** Waits (long polling, bounded) for `count` run dispatches and deletes nothing. */
export async function receiveRunIds(
  sqs: SQSClient,
  queueUrl: string,
  count: number,
): Promise<string[]> {
  const ids: string[] = [];
  const deadline = Date.now() + 20_000;
  while (ids.length < count && Date.now() < deadline) {
    const out = await sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: queueUrl,
        MaxNumberOfMessages: 10,
        WaitTimeSeconds: 1,
        VisibilityTimeout: 300,
      }),
    );
    for (const m of out.Messages ?? [])
      ids.push((JSON.parse(m.Body ?? "{}") as { run_id: string }).run_id);
  }
  return ids;
}
