import type { Logger } from "pino";
import { z } from "zod";
import type { FileView } from "../../../shared/paths/file-view.ts";
import type { WorkspaceFs } from "../../workspace/index.ts";
import type { EmitFn } from "./agent-event.ts";
import type { ToolSpec } from "./model-client.ts";
import type { SandboxExec } from "./sandbox-exec.ts";
import type { SubagentSpawner } from "./subagent-spawner.ts";
import type { ToolOutputStream } from "./tool-output-stream.ts";

/** What every tool of one run works with; built once per run by the worker. */
export interface ToolEnvironment {
  /** The execution tree's sandbox. */
  readonly sandbox: SandboxExec;
  /**
   * The caller's whole UserWorkspace (what /home/gem/user-data shows), through the safe
   * file layer: no-follow, never leaves the root, no-clobber writes.
   */
  readonly workspace: WorkspaceFs;
  /** The run's Workdir, relative to the UserWorkspace (normalizeWorkdirPath form). */
  readonly workdirPath: string;
  /** What the run may write (`agent.file_view`); `workspace` when absent. */
  readonly fileView?: FileView;
  /** Absent where sub-agents are not allowed (e.g. past the depth limit). */
  readonly subagents?: SubagentSpawner;
}

/** The environment plus what belongs to one tool call. */
export interface ToolContext extends ToolEnvironment {
  readonly toolCallId: string;
  /** For tool-specific events (`subagent.*`); awaited like every other event. */
  readonly emit: EmitFn;
  /** The loop's logger with tool and tool_call_id bound. */
  readonly logger: Logger;
  /**
   * A stream for this call's live command output (`tool.output` events, bounded per event
   * and per run); the caller must `close()` it before returning, error or not.
   */
  readonly liveOutput: () => ToolOutputStream;
}

export interface ToolResult {
  /** True when the call failed or was refused; the model sees it and may try otherwise. */
  readonly isError: boolean;
  /** What the model reads (capped by the loop's maxToolOutputBytes). */
  readonly content: string;
  /** Small structured facts for the `tool.completed` event (exit code, path, bytes). */
  readonly details?: Readonly<Record<string, unknown>>;
}

/**
 * A tool the model can call. The loop parses the model's JSON arguments and validates
 * them with `parameters` before `execute` runs, so `execute` gets typed, checked input;
 * a bad call never reaches it and is reported to the model instead.
 *
 * `execute` returns refusals and failures the model should see as a result with
 * `isError: true`, or throws: a 4xx WorkcellError (forbidden, not_found, conflict …) is
 * reported to the model the same way; anything else ends the run (tool-failure.ts).
 * When `signal` aborts it rejects with the signal's reason.
 */
export interface Tool<Args = unknown> {
  /** `^[a-zA-Z0-9_-]{1,64}$`, what Chat Completions accepts as a function name. */
  readonly name: string;
  readonly description: string;
  readonly parameters: z.ZodType<Args>;
  execute(args: Args, ctx: ToolContext, signal: AbortSignal): Promise<ToolResult>;
}

/** The JSON Schema form of a tool for the model (input side: defaults are optional). */
export function toolSpecOf(tool: Tool): ToolSpec {
  const { $schema: _ignored, ...parameters } = z.toJSONSchema(tool.parameters, { io: "input" });
  return { name: tool.name, description: tool.description, parameters };
}
