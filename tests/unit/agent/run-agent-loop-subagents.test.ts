import { describe, expect, it } from "vitest";
import type { SubagentSpawner, Tool } from "../../../agent-host/runs/agent/index.ts";
import { createSpawnSubagentTool } from "../../../agent-host/runs/agent/tools/spawn-subagent-tool.ts";
import { setup, unusedToolEnv } from "./loop-harness.ts";

describe("runAgentLoop", () => {
  it("spawn_subagent reports the child in the parent's stream", async () => {
    const tasks: string[] = [];
    const subagents: SubagentSpawner = {
      async spawn(request) {
        tasks.push(request.task);
        await request.onStarted({ runId: "child-run", threadId: "child-thread" });
        return {
          runId: "child-run",
          threadId: "child-thread",
          status: "succeeded",
          finalText: "42",
        };
      },
    };
    const t = setup(
      [
        { toolCalls: [{ name: "spawn_subagent", arguments: { task: "compute the answer" } }] },
        { text: "The answer is 42." },
      ],
      { tools: [createSpawnSubagentTool() as Tool], toolEnv: unusedToolEnv({ subagents }) },
    );
    const result = await t.run();
    expect(result.status).toBe("succeeded");
    expect(tasks).toEqual(["compute the answer"]);
    expect(t.types()).toEqual([
      "run.status",
      "tool.started",
      "subagent.started",
      "subagent.completed",
      "tool.completed",
      "message.delta",
      "message.delta",
      "message.delta",
      "message.completed",
    ]);
    expect(t.events[2]).toEqual({
      type: "subagent.started",
      data: { tool_call_id: "call_1_1", run_id: "child-run", thread_id: "child-thread" },
    });
    expect(t.model.requests[1]?.messages.at(-1)?.content).toBe("42");
  });

  it("spawn_subagent without a spawner is a refusal", async () => {
    const t = setup(
      [{ toolCalls: [{ name: "spawn_subagent", arguments: { task: "x" } }] }, { text: "fine" }],
      { tools: [createSpawnSubagentTool() as Tool] },
    );
    expect((await t.run()).status).toBe("succeeded");
    expect(t.model.requests[1]?.messages.at(-1)?.content).toContain("subagents_unavailable");
  });
});
