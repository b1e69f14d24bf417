import { z } from "zod";
import type { Tool } from "../tool.ts";
import { refusalResult } from "../tool-failure.ts";

export const SPAWN_SUBAGENT_TOOL_NAME = "spawn_subagent";
/** Longest task text; the child's run input has the same bound in the API. */
export const MAX_SUBAGENT_TASK_CHARS = 200_000;

const spawnSubagentArgs = z.strictObject({
  task: z
    .string()
    .min(1)
    .max(MAX_SUBAGENT_TASK_CHARS)
    .describe(
      "The complete, self-contained task. The sub-agent does not see this conversation: include every detail it needs.",
    ),
});

export type SpawnSubagentArgs = z.output<typeof spawnSubagentArgs>;

/**
 * Delegates a task to a child run in the same execution tree (same sandbox, same Workdir)
 * and returns its final answer. The child's lifecycle belongs to the worker's
 * SubagentSpawner; this tool only reports it as `subagent.*` events in the parent's stream.
 */
export function createSpawnSubagentTool(): Tool<SpawnSubagentArgs> {
  return {
    name: SPAWN_SUBAGENT_TOOL_NAME,
    description:
      "Start a sub-agent on a self-contained task and wait for its final answer. It works in the same Workdir and " +
      "sandbox as you, so it sees your files and can write new ones.",
    parameters: spawnSubagentArgs,
    async execute(args, ctx, signal) {
      if (ctx.subagents === undefined) {
        return refusalResult(
          "forbidden",
          "subagents_unavailable",
          "Sub-agents are not available in this run: do the task yourself.",
        );
      }
      let started = false;
      const outcome = await ctx.subagents.spawn(
        {
          task: args.task,
          toolCallId: ctx.toolCallId,
          onStarted: async (child) => {
            started = true;
            await ctx.emit({
              type: "subagent.started",
              data: {
                tool_call_id: ctx.toolCallId,
                run_id: child.runId,
                thread_id: child.threadId,
              },
            });
          },
        },
        signal,
      );
      // Only a child that was announced is closed: a `completed` without `started` would
      // point readers at a run they never heard of.
      if (started) {
        await ctx.emit({
          type: "subagent.completed",
          data: {
            tool_call_id: ctx.toolCallId,
            run_id: outcome.runId,
            status: outcome.status,
            ...(outcome.error === undefined ? {} : { error: outcome.error }),
          },
        });
      }
      signal.throwIfAborted();
      const details = {
        run_id: outcome.runId,
        thread_id: outcome.threadId,
        status: outcome.status,
      };
      switch (outcome.status) {
        case "succeeded":
          return {
            isError: false,
            content:
              outcome.finalText === ""
                ? "(the sub-agent finished without an answer)"
                : outcome.finalText,
            details,
          };
        case "failed":
          return {
            isError: true,
            content: `The sub-agent failed (${outcome.error?.code ?? "unknown"}): ${outcome.error?.message ?? "no details"}`,
            details,
          };
        case "cancelled":
          return {
            isError: true,
            content: "The sub-agent was cancelled before it finished.",
            details,
          };
      }
    },
  };
}
