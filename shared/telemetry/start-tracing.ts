import type { OtlpExporterConfig } from "./otlp-exporter-config.ts";
import { noTracing, type Tracing } from "./tracing.ts";
import { type TracingEnv, tracesExporterOf } from "./tracing-env.ts";

/** A process's tracing and how to flush it at exit. */
export type StartedTracing = {
  readonly tracing: Tracing;
  readonly enabled: boolean;
  /** Exports what is buffered and stops (bounded by the export timeout). */
  shutdown(): Promise<void>;
  /**
   * Exports what is buffered now and keeps going: a Lambda instance is frozen when its
   * invocation returns, so its spans must leave before (docs/decisions/0034).
   */
  flush(): Promise<void>;
};

export type StartTracingOptions = {
  /**
   * Where there is no process environment for the SDK to read (Workers): the exporter's
   * settings (otlpExporterConfigOf) and the service name come from the parsed `env`.
   * Unset (Node entries): the exporter and the resource read OTEL_* themselves.
   */
  readonly explicit?: { readonly otlp: OtlpExporterConfig };
};

/**
 * Tracing of a Node entry (functions/entry/node.ts, agent-host/main.ts, local mode) from
 * its parsed OTEL_* environment. Off (the default): the no-op tracer and nothing of the
 * SDK is even imported, so tracing off costs nothing. On: the SDK is imported here, once,
 * and the tracer provider is returned to be passed in, never registered as a global.
 */
export async function startTracing(
  env: TracingEnv,
  defaultServiceName: string,
  options: StartTracingOptions = {},
): Promise<StartedTracing> {
  const exporter = tracesExporterOf(env);
  if (exporter === "none") {
    return {
      tracing: noTracing(),
      enabled: false,
      shutdown: async () => {},
      flush: async () => {},
    };
  }
  const { createSdkTracing } = await import("./sdk-tracing.ts");
  return createSdkTracing(env, exporter, defaultServiceName, options);
}
