import {
  inSpan,
  SpanKind,
  type TraceContext,
  type Tracing,
} from "../../../shared/telemetry/tracing.ts";
import type { ModelClient, SandboxExec } from "../agent/index.ts";

/**
 * Each model call of a run as a CLIENT span (`model.call`), a child of the run's trace.
 * Attributes are what an operator needs to read latency, never content: the model's
 * name, the finish reason or failure kind, token counts.
 */
export function tracedModelClient(
  model: ModelClient,
  tracing: Tracing,
  parent: TraceContext,
): ModelClient {
  return {
    name: model.name,
    complete: (request, signal) =>
      inSpan(
        tracing,
        "model.call",
        { parent, kind: SpanKind.CLIENT, attributes: { "gen_ai.request.model": model.name } },
        async (span) => {
          const result = await model.complete(request, signal);
          if (result.ok) {
            span.setAttribute("gen_ai.response.finish_reasons", [result.turn.finishReason]);
            const usage = result.turn.usage;
            if (usage !== undefined) {
              span.setAttributes({
                "gen_ai.usage.input_tokens": usage.inputTokens,
                "gen_ai.usage.output_tokens": usage.outputTokens,
              });
            }
          } else span.setAttribute("error.type", `model_${result.failure.kind}`);
          return result;
        },
      ),
  };
}

/**
 * Each command in the sandbox as a span (`sandbox.exec`): how it ended and its exit code,
 * never the command line or its output (user data).
 */
export function tracedSandboxExec(
  inner: SandboxExec,
  tracing: Tracing,
  parent: TraceContext,
  attributes: { readonly sandboxId: string; readonly generation: number },
): SandboxExec {
  return {
    exec: (command, options) =>
      inSpan(
        tracing,
        "sandbox.exec",
        {
          parent,
          attributes: {
            "workcell.sandbox_id": attributes.sandboxId,
            "workcell.generation": attributes.generation,
          },
        },
        async (span) => {
          const result = await inner.exec(command, options);
          span.setAttributes({
            "workcell.exec_status": result.status,
            ...(result.exitCode === null ? {} : { "process.exit.code": result.exitCode }),
          });
          return result;
        },
      ),
  };
}
