import { describe, expect, it } from "vitest";
import type { Tool } from "../../../agent-host/runs/agent/index.ts";
import { domainError, WorkcellError } from "../../../shared/errors/index.ts";
import { echoTool, setup, throwingTool } from "./loop-harness.ts";

describe("runAgentLoop", () => {
  describe("tool errors are results, and the run goes on", () => {
    it.each([
      [
        "a refusal of the file layer",
        throwingTool("refuse", () => domainError("symlink_refused")),
        "Error (forbidden: symlink_refused)",
      ],
      [
        "a conflict",
        throwingTool("refuse", () => domainError("name_exists")),
        "Error (conflict: name_exists)",
      ],
      [
        "a not-found",
        throwingTool("refuse", () => new WorkcellError("not_found", "No such file: x.")),
        "Error (not_found): No such file: x.",
      ],
    ])("%s", async (_label, tool, expected) => {
      const t = setup(
        [{ toolCalls: [{ name: "refuse", arguments: {} }] }, { text: "I could not, sorry." }],
        { tools: [tool as Tool] },
      );
      const result = await t.run();
      expect(result.status).toBe("succeeded");
      const completed = t.events.find((e) => e.type === "tool.completed");
      expect(completed).toMatchObject({ data: { is_error: true } });
      const fedBack = t.model.requests[1]?.messages.at(-1);
      expect(fedBack).toMatchObject({ role: "tool" });
      expect(fedBack?.content).toContain(expected);
    });

    it("an unknown tool, malformed JSON and arguments off the schema", async () => {
      const t = setup([
        {
          toolCalls: [
            { name: "nope", arguments: {} },
            { name: "echo", arguments: "{not json" },
            { name: "echo", arguments: { text: 42 } },
          ],
        },
        { text: "ok" },
      ]);
      const result = await t.run();
      expect(result.status).toBe("succeeded");
      const results = (t.model.requests[1]?.messages ?? []).filter((m) => m.role === "tool");
      expect(results.map((m) => m.content)).toEqual([
        expect.stringContaining("There is no tool 'nope'. Available tools: echo."),
        expect.stringContaining("not valid JSON"),
        expect.stringContaining("do not match its schema"),
      ]);
      // The malformed input is still shown in the event, as the model wrote it.
      expect(t.events.filter((e) => e.type === "tool.started")[1]).toMatchObject({
        data: { input: "{not json" },
      });
    });

    it("cuts a huge result to maxToolOutputBytes", async () => {
      const t = setup(
        [{ toolCalls: [{ name: "echo", arguments: { text: "é".repeat(1000) } }] }, { text: "ok" }],
        { limits: { maxToolOutputBytes: 101 } },
      );
      await t.run();
      // Head (76 bytes → 38 characters) and tail (25 bytes → 12), never half a character.
      const fedBack = t.model.requests[1]?.messages.at(-1)?.content ?? "";
      expect(fedBack).toBe(
        `${"é".repeat(38)}\n[output truncated: 1900 bytes omitted here; narrow the command or read the file in parts]\n${"é".repeat(12)}`,
      );
    });
  });

  describe("fatal tool errors end the run", () => {
    it("an unexpected error: failed/tool_interrupted (the command may have run), without leaking its message", async () => {
      const t = setup([{ toolCalls: [{ name: "boom", arguments: {} }] }, { text: "never" }], {
        tools: [throwingTool("boom", () => new Error("/srv/data-root/secret path")) as Tool],
      });
      const result = await t.run();
      expect(result).toMatchObject({ status: "failed", error: { code: "tool_interrupted" } });
      expect(result.error?.message).toContain("the command may have completed; check the Workdir");
      expect(result.error?.message).not.toMatch(/retry the run/);
      expect(JSON.stringify(t.events)).not.toContain("/srv/data-root");
      expect(t.model.requests).toHaveLength(1);
    });

    it("a sandbox generation that is over mid-call: failed/tool_interrupted, never 'retry the run'", async () => {
      const t = setup(
        [
          {
            toolCalls: [
              { name: "gone", arguments: {} },
              { name: "echo", arguments: { text: "not run" } },
            ],
          },
        ],
        {
          tools: [
            throwingTool("gone", () => domainError("stale_generation")) as Tool,
            echoTool as Tool,
          ],
        },
      );
      const result = await t.run();
      expect(result).toMatchObject({ status: "failed", error: { code: "tool_interrupted" } });
      expect(t.types().filter((type) => type === "tool.started")).toHaveLength(1);
      // The transcript stays well-formed: every call has a result.
      expect(result.newMessages.filter((m) => m.role === "tool")).toHaveLength(2);
    });
  });

  describe("a Docker engine that did not answer", () => {
    const engineTimeout = (commandRan: string) =>
      setup([{ toolCalls: [{ name: "hung", arguments: {} }] }, { text: "never" }], {
        tools: [
          throwingTool("hung", () =>
            domainError("sandbox_engine_unresponsive", {
              message: `Docker did not answer (${commandRan})`,
              details: { command_ran: commandRan },
            }),
          ) as Tool,
        ],
      });

    it("before the command ran: failed with its own code, the message says nothing ran", async () => {
      const result = await engineTimeout("no").run();
      expect(result).toMatchObject({
        status: "failed",
        error: { code: "sandbox_engine_unresponsive", message: "Docker did not answer (no)" },
      });
    });

    it("once the command may have run: failed/tool_interrupted with the engine's message", async () => {
      for (const ran of ["maybe", "yes"]) {
        const result = await engineTimeout(ran).run();
        expect(result).toMatchObject({
          status: "failed",
          error: { code: "tool_interrupted", message: `Docker did not answer (${ran})` },
        });
      }
    });
  });
});
