import { describe, expect, it } from "vitest";
import type { Tool } from "../../../agent-host/runs/agent/index.ts";
import { blockingTool, echoTool, setup } from "./loop-harness.ts";

describe("runAgentLoop", () => {
  describe("cancellation", () => {
    it("before the first turn", async () => {
      const controller = new AbortController();
      controller.abort();
      const t = setup([{ text: "never" }], { signal: controller.signal });
      const result = await t.run();
      expect(result.status).toBe("cancelled");
      expect(t.model.requests).toHaveLength(0);
      expect(t.types()).toEqual(["run.status"]);
    });

    it("during a tool: the tool's signal aborts, no further turn", async () => {
      const controller = new AbortController();
      const blocking = blockingTool();
      const t = setup(
        [
          {
            toolCalls: [
              { name: "block", arguments: {} },
              { name: "echo", arguments: { text: "not run" } },
            ],
          },
          { text: "never" },
        ],
        { tools: [blocking.tool as Tool, echoTool as Tool], signal: controller.signal },
      );
      const running = t.run();
      await blocking.started;
      controller.abort();
      const result = await running;
      expect(result.status).toBe("cancelled");
      expect(t.model.requests).toHaveLength(1);
      expect(t.types()).toEqual(["run.status", "tool.started", "tool.completed"]);
      expect(t.events[2]).toMatchObject({ data: { is_error: true } });
      expect(result.error).toBeUndefined();
    });

    it("during a model call", async () => {
      const controller = new AbortController();
      const t = setup(
        [
          {
            respond: async (request, signal) => {
              await request.onTextDelta?.("partial ");
              controller.abort();
              signal.throwIfAborted();
              throw new Error("unreachable");
            },
          },
        ],
        { signal: controller.signal },
      );
      const result = await t.run();
      expect(result.status).toBe("cancelled");
      expect(t.types()).toEqual(["run.status", "message.delta"]);
    });
  });
});
