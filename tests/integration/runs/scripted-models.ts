import {
  createScriptedModelClient,
  type ScriptedModelClient,
  type ScriptedStep,
} from "../../../agent-host/runs/agent/index.ts";
import type { ModelClientFactory, ModelClientRequest } from "../../../agent-host/runs/index.ts";

/**
 * A model per run from a script chosen by the test (by the run's input, depth …), with
 * every client kept so a test can read the conversation each model saw.
 */
export function scriptedModels(script: (request: ModelClientRequest) => ScriptedStep[]): {
  factory: ModelClientFactory;
  clients: { request: ModelClientRequest; client: ScriptedModelClient }[];
} {
  const clients: { request: ModelClientRequest; client: ScriptedModelClient }[] = [];
  return {
    clients,
    factory: (request) => {
      const client = createScriptedModelClient(script(request));
      clients.push({ request, client });
      return client;
    },
  };
}

/** A promise with its resolve, for making a scripted model wait for the test. */
export function gate(): { promise: Promise<void>; open: () => void } {
  let open = () => {};
  const promise = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { promise, open };
}

/** A model turn that first waits (e.g. for the test) and then answers `text`. */
export function waitThenSay(wait: () => Promise<unknown>, text: string): ScriptedStep {
  return {
    respond: async (_request, signal) => {
      await wait();
      signal.throwIfAborted();
      return {
        ok: true,
        turn: {
          message: { role: "assistant", content: text, toolCalls: [] },
          finishReason: "stop",
        },
      };
    },
  };
}

/** Text of the `tool.completed` events of a run, in order. */
export function toolOutputs(events: { type: string; data: unknown }[]): string[] {
  return events
    .filter((e) => e.type === "tool.completed")
    .map((e) => String((e.data as { output?: { text?: unknown } }).output?.text ?? ""));
}
