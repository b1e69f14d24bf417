import { z } from "zod";
import {
  type AgentEvent,
  type AgentLoopInput,
  createScriptedModelClient,
  runAgentLoop,
  type SandboxExec,
  type ScriptedStep,
  type Tool,
  type ToolEnvironment,
} from "../../../agent-host/runs/agent/index.ts";
import type { WorkspaceFs } from "../../../agent-host/workspace/index.ts";
import { testLogger } from "../../support/test-logger.ts";

export const silentLogger = testLogger();

export const WORKDIR = "projects/0b9f7a1e-1b2c-4d3e-8f90-123456789abc";

/** Events as the worker would receive them, in order. */
export function eventRecorder(): {
  events: AgentEvent[];
  emit: (event: AgentEvent) => void;
  types: () => string[];
} {
  const events: AgentEvent[] = [];
  return {
    events,
    emit: (event) => void events.push(event),
    types: () => events.map((e) => e.type),
  };
}

/**
 * A tool environment for loop tests whose tools are defined by the test: touching the
 * sandbox or the workspace fails the test (those are covered by the integration tests).
 */
export function unusedToolEnv(overrides: Partial<ToolEnvironment> = {}): ToolEnvironment {
  const sandbox: SandboxExec = {
    exec: () => Promise.reject(new Error("this test must not use the sandbox")),
  };
  const workspace = new Proxy({} as WorkspaceFs, {
    get: () => {
      throw new Error("this test must not use the workspace");
    },
  });
  return { sandbox, workspace, workdirPath: WORKDIR, ...overrides };
}

/** `echo`: returns its text; the simplest tool that shows results reach the model. */
export const echoTool: Tool<{ text: string }> = {
  name: "echo",
  description: "Returns its text.",
  parameters: z.strictObject({ text: z.string() }),
  async execute(args) {
    return { isError: false, content: args.text };
  },
};

/** A tool that throws what the test gives it. */
export function throwingTool(name: string, error: () => unknown): Tool<Record<string, never>> {
  return {
    name,
    description: "Throws.",
    parameters: z.strictObject({}),
    async execute() {
      throw error();
    },
  };
}

/** A tool that runs until its signal aborts, like a long `sleep`; `started` resolves when it runs. */
export function blockingTool(): { tool: Tool<Record<string, never>>; started: Promise<void> } {
  let markStarted: () => void = () => {};
  const started = new Promise<void>((resolve) => {
    markStarted = resolve;
  });
  return {
    started,
    tool: {
      name: "block",
      description: "Blocks until cancelled.",
      parameters: z.strictObject({}),
      execute(_args, _ctx, signal) {
        markStarted();
        return new Promise((_resolve, reject) => {
          signal.addEventListener("abort", () => reject(signal.reason), { once: true });
        });
      },
    },
  };
}

/** A loop over a scripted model with the echo tool; `run` starts it, the recorder watches. */
export function setup(
  steps: readonly ScriptedStep[],
  options: Partial<Omit<AgentLoopInput, "model" | "emit">> & { tools?: readonly Tool[] } = {},
) {
  const model = createScriptedModelClient(steps);
  const recorder = eventRecorder();
  const input: AgentLoopInput = {
    model,
    tools: [echoTool as Tool],
    toolEnv: unusedToolEnv(),
    systemPrompt: "You are a test.",
    messages: [{ role: "user", content: "hi" }],
    signal: new AbortController().signal,
    logger: silentLogger,
    ...options,
    limits: { deltaFlushChars: 0, ...options.limits },
    emit: recorder.emit,
  };
  return { model, ...recorder, run: () => runAgentLoop(input) };
}
