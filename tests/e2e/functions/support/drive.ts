import { ReceiveMessageCommand, type SQSClient } from "@aws-sdk/client-sqs";
import { expect, inject } from "vitest";
import type { Run } from "../../../../shared/contracts/run.ts";
import type { Thread } from "../../../../shared/contracts/thread.ts";
import {
  type ChatServer,
  openStream,
  send,
  startChatServer,
  textChunk,
  toolChunk,
} from "../../../integration/agent/chat-server.ts";
import { readSse, type SseFrame } from "../../../integration/functions/support/sse.ts";
import { startAgentHostProcess } from "./agent-host-process.ts";

/** What the sandbox prints for the model's command: only a command that really ran knows it. */
const COMMAND = "echo $((6 * 7))-from-the-sandbox";
const PRINTED = "42-from-the-sandbox";

/**
 * The LLM of a deployment, over the real Chat Completions wire protocol: asked about a
 * user message it calls `bash` with COMMAND; given the call's result it replies with that
 * result verbatim (so the reply carries what the sandbox printed).
 */
export function startEchoModel(): Promise<ChatServer> {
  return startChatServer((request, res) => {
    const last = (request.body.messages as { role: string; content: string }[]).at(-1);
    openStream(res);
    if (last?.role === "tool") {
      send(res, textChunk(`the sandbox said: ${last.content}`, "stop"));
    } else {
      send(
        res,
        toolChunk(
          [
            {
              index: 0,
              id: "call_1",
              name: "bash",
              arguments: JSON.stringify({ command: COMMAND }),
            },
          ],
          "tool_calls",
        ),
      );
    }
    send(res, "[DONE]");
    res.end();
  });
}

/**
 * `driveThreadAndRun` against a control plane configured by `functionsVars`, with its run
 * worker: an agent-host process on the same database and queue, started for this call only
 * and stopped (with its sandboxes) at the end, so a later test may read the queue itself.
 */
export async function driveWithRealWorker(p: {
  url: string;
  token: string;
  functionsVars: Record<string, string>;
  nodePrefix: string;
}): Promise<void> {
  const image = inject("sandboxImage");
  if (!image) throw new Error(inject("dockerError") || "the sandbox image is missing");
  const model = await startEchoModel();
  try {
    const agentHost = await startAgentHostProcess({
      functionsVars: p.functionsVars,
      image,
      nodePrefix: p.nodePrefix,
      env: { MODEL_BASE_URL: model.baseUrl, MODEL_NAME: "echo-model" },
    });
    try {
      await driveThreadAndRun({ url: p.url, token: p.token, model }).catch((error) => {
        throw new Error(`${error}\nagent-host output:\n${agentHost.output()}`, { cause: error });
      });
    } finally {
      await agentHost.stop();
    }
  } finally {
    await model.close();
  }
}

/**
 * What a user does with a deployed Workcell, over real HTTP: a thread, a run in it, its
 * events live over SSE until the end. A real agent-host executes the run with
 * `startEchoModel` as its model (MODEL_BASE_URL): the run ends `succeeded` only if the
 * dispatch reached the worker, the command ran in a sandbox and the reply was recorded.
 */
export async function driveThreadAndRun(p: {
  url: string;
  token: string;
  model: ChatServer;
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
    body: JSON.stringify({ input: "What is six times seven? Ask the sandbox." }),
  });
  expect(submitted.status).toBe(202);
  const run = (await submitted.json()) as Run;
  expect(run).toMatchObject({ status: "pending", runtime_scope_id: thread.thread_id });

  const events = await fetch(`${p.url}/v1/runs/${run.run_id}/events`, { headers });
  expect(events.status).toBe(200);
  expect(events.headers.get("content-type")).toMatch(/^text\/event-stream/);
  const { frames, ended } = await readSse(events.body as ReadableStream<Uint8Array>);
  expect(ended).toBe(true);
  const recorded = frames.filter((f) => f.event !== undefined);
  // Every event once, in order, from the first (a replay from 0, then live until the end).
  expect(recorded.map((f) => f.id)).toEqual(recorded.map((_, i) => String(i + 1)));
  const types = recorded.map((f) => f.event);
  for (const type of ["tool.started", "tool.completed", "message.delta", "run.completed"]) {
    expect(types).toContain(type);
  }
  expect(types.at(-1)).toBe("run.completed");
  // Each frame's data is the whole event (docs/api.md "Run events").
  const data = (f: SseFrame) =>
    (JSON.parse(f.data ?? "{}") as { data: Record<string, unknown> }).data;
  expect(data(recorded.at(-1) as SseFrame)).toMatchObject({ status: "succeeded" });
  const reply = recorded
    .filter((f) => f.event === "message.delta")
    .map((f) => String(data(f).text))
    .join("");
  expect(reply).toContain(PRINTED);
  // The model was asked twice (the command, then the reply) and saw the command's output.
  expect(p.model.requests.length).toBe(2);
  expect(JSON.stringify(p.model.requests[1]?.body.messages)).toContain(PRINTED);

  const fetched = await fetch(`${p.url}/v1/runs/${run.run_id}`, { headers });
  expect((await fetched.json()) as Run).toMatchObject({
    run_id: run.run_id,
    status: "succeeded",
  });
  const other = await fetch(`${p.url}/v1/runs/${run.run_id}`, {
    headers: { authorization: "Bearer nope" },
  });
  expect(other.status).toBe(401);
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
