import { eq } from "drizzle-orm";
import { afterEach, beforeEach, expect, it } from "vitest";
import { conversations } from "../../../shared/db/schema.ts";
import { sandboxId } from "../../../shared/identity/sandbox-id.ts";
import { captureLogs } from "../../support/log-capture.ts";
import { containersOfNode, materializeWorkdir } from "../sandbox/sandbox-fixture.ts";
import { expectGapFree, type RunWorld, runWorld, UID } from "./run-harness.ts";
import { gate, scriptedModels, toolOutputs, waitThenSay } from "./scripted-models.ts";

let world: RunWorld;

beforeEach(async () => {
  world = await runWorld();
});
afterEach(async () => {
  await world.cleanup();
});

const LINKED = "code/shared-dir";

it("sub-agents share the sandbox and the Workdir; another root thread on the Workdir shares only the files", async () => {
  await materializeWorkdir(world.dataRoot.path, UID, LINKED);
  const secondChecked = gate();
  let containersDuringSecond = -1;
  const models = scriptedModels((request) => {
    if (request.depth === 1) {
      return [
        {
          toolCalls: [
            {
              name: "bash",
              arguments: { command: "echo secret-from-child > /tmp/from-child.txt" },
            },
            { name: "write_file", arguments: { path: "child-file.txt", content: "from child\n" } },
          ],
        },
        { text: "child done" },
      ];
    }
    if (request.input === "PARENT") {
      return [
        { toolCalls: [{ name: "spawn_subagent", arguments: { task: "CHILD TASK" } }] },
        {
          toolCalls: [
            { name: "bash", arguments: { command: "cat /tmp/from-child.txt child-file.txt" } },
          ],
        },
        // Keeps the parent's tree (and sandbox) alive while the second thread looks.
        waitThenSay(() => secondChecked.promise, "parent done"),
      ];
    }
    return [
      {
        toolCalls: [
          {
            name: "bash",
            arguments: {
              command: "cat child-file.txt; cat /tmp/from-child.txt || echo no-tmp-file",
            },
          },
        ],
      },
      waitThenSay(async () => {
        containersDuringSecond = (await containersOfNode(world.docker, world.nodeId)).length;
        secondChecked.open();
      }, "second done"),
    ];
  });
  await world.worker({ model: models.factory });
  const project = await world.project({ linkedPath: LINKED });
  const threadA = await world.thread(project);
  const threadB = await world.thread(project);

  const parentId = await world.submit(threadA, "PARENT");
  await world.waitForEvent(parentId, "subagent.completed");
  // The child's work is visible to the parent before the second thread starts.
  const secondId = await world.submit(threadB, "SECOND");

  const parent = await world.waitForRun(parentId);
  const second = await world.waitForRun(secondId);
  expect(parent.status).toBe("succeeded");
  expect(second.status).toBe("succeeded");

  const parentEvents = await world.events(parentId);
  expectGapFree(parentEvents);
  // The cat's live output may come in one event or several (coalescing is timed).
  const parentTypes = parentEvents.map((e) => e.type);
  expect(parentTypes.filter((t, i) => t !== "tool.output" || parentTypes[i - 1] !== t)).toEqual([
    "run.status",
    "tool.started",
    "subagent.started",
    "subagent.completed",
    "tool.completed",
    "tool.started",
    "tool.output",
    "tool.completed",
    "message.completed",
    "run.completed",
  ]);
  const [spawnResult, parentCat] = toolOutputs(parentEvents);
  expect(spawnResult).toBe("child done");
  // Same sandbox: the child's /tmp file; same Workdir: the child's file.
  expect(parentCat).toBe("secret-from-child\nfrom child\n");

  // A second root thread on the same Workdir: the files, never that /tmp.
  const [secondCat] = toolOutputs(await world.events(secondId));
  expect(secondCat).toContain("from child");
  expect(secondCat).toContain("no-tmp-file");
  expect(secondCat).not.toContain("secret-from-child");
  expect(containersDuringSecond).toBe(2);
  expect(sandboxId(UID, threadA)).not.toBe(sandboxId(UID, threadB));

  // The child run: its own thread under the parent's, the parent's scope, its own events.
  const [child] = await world.childRuns(parentId);
  expect(child).toMatchObject({
    status: "succeeded",
    runtimeScopeId: threadA,
    parentRunId: parentId,
    requestId: null,
    ownerNode: world.nodeId,
  });
  const [childThread] = await world.db
    .select()
    .from(conversations)
    .where(eq(conversations.threadId, child?.threadId ?? ""));
  expect(childThread).toMatchObject({
    parentThreadId: threadA,
    rootThreadId: threadA,
    projectId: project.id,
  });
  const childEvents = await world.events(child?.runId ?? "");
  expectGapFree(childEvents);
  expect(parentEvents[2]?.data).toMatchObject({ run_id: child?.runId, thread_id: child?.threadId });
  expect(await world.assistantMessages(child?.threadId ?? "")).toEqual(["child done"]);
  // The child model got its task as the user message and the sub-agent system prompt.
  const childModel = models.clients.find((c) => c.request.depth === 1)?.client;
  const firstRequest = childModel?.requests[0];
  expect(firstRequest?.messages.at(-1)).toEqual({ role: "user", content: "CHILD TASK" });
  expect(firstRequest?.messages[0]?.content).toContain("sub-agent");

  await world.waitForNoContainers();
});

it("a sub-agent at the depth limit is not offered spawn_subagent; the fan-out limit is a refusal", async () => {
  const models = scriptedModels((request) => {
    if (request.depth === 0) {
      return [
        { toolCalls: [{ name: "spawn_subagent", arguments: { task: "one" } }] },
        { toolCalls: [{ name: "spawn_subagent", arguments: { task: "two" } }] },
        { text: "root done" },
      ];
    }
    return [{ text: `child ${request.input} done` }];
  });
  await world.worker({
    model: models.factory,
    limits: { maxSubagentDepth: 1, maxSubagentsPerRun: 1 },
  });
  const thread = await world.thread(await world.project());
  const runId = await world.submit(thread, "ROOT");
  expect((await world.waitForRun(runId)).status).toBe("succeeded");
  const outputs = toolOutputs(await world.events(runId));
  expect(outputs[0]).toBe("child one done");
  expect(outputs[1]).toMatch(/forbidden.*subagent_limit|already started 1 sub-agents/);
  expect(await world.childRuns(runId)).toHaveLength(1);
  const childTools = models.clients
    .find((c) => c.request.depth === 1)
    ?.client.requests[0]?.tools.map((t) => t.name);
  expect(childTools).not.toContain("spawn_subagent");
  expect(
    models.clients.find((c) => c.request.depth === 0)?.client.requests[0]?.tools.map((t) => t.name),
  ).toContain("spawn_subagent");
});

it("a sub-agent's run row and log lines carry its tree's submitting request id", async () => {
  const models = scriptedModels((request) =>
    request.depth === 0
      ? [
          { toolCalls: [{ name: "spawn_subagent", arguments: { task: "LOGGED" } }] },
          { text: "root done" },
        ]
      : [{ toolCalls: [{ name: "bash", arguments: { command: "true" } }] }, { text: "done" }],
  );
  const logs = captureLogs("debug");
  await world.worker({ model: models.factory, extra: { logger: logs.logger } });
  const thread = await world.thread(await world.project());
  const requestId = `req-${crypto.randomUUID()}`;
  const rootId = await world.submit(thread, "ROOT", undefined, requestId);
  expect((await world.waitForRun(rootId)).status).toBe("succeeded");
  const [child] = await world.childRuns(rootId);
  expect(child).toMatchObject({ status: "succeeded", originRequestId: requestId });

  // The child's lines (its bash command under the lease, its ending) name the request once.
  const childLines = logs.raw.filter((l) => l.includes(`"run_id":"${child?.runId}"`));
  expect(childLines.map((l) => JSON.parse(l).msg)).toContain("run ended");
  for (const line of childLines) {
    expect(JSON.parse(line)).toMatchObject({ request_id: requestId, parent_run_id: rootId });
    expect(line.split('"request_id":').length).toBe(2);
  }
});
