import { W3CTraceContextPropagator } from "@opentelemetry/core";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { detectResources, envDetector, resourceFromAttributes } from "@opentelemetry/resources";
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  BatchSpanProcessor,
  ConsoleSpanExporter,
  ParentBasedSampler,
  type Sampler,
  type SpanExporter,
  TraceIdRatioBasedSampler,
  TracerProvider,
} from "@opentelemetry/sdk-trace";
import type { StartedTracing, StartTracingOptions } from "./start-tracing.ts";
import type { TracingEnv } from "./tracing-env.ts";

// Imported only when tracing is on (start-tracing.ts): this module is the SDK's only door.

export function createSdkTracing(
  env: TracingEnv,
  exporterKind: "otlp" | "console",
  defaultServiceName: string,
  options: StartTracingOptions = {},
): StartedTracing {
  const { explicit } = options;
  const exporter: SpanExporter =
    exporterKind === "console"
      ? new ConsoleSpanExporter()
      : new OTLPTraceExporter(explicit?.otlp ?? {});
  const provider = new TracerProvider({
    // OTEL_SERVICE_NAME / OTEL_RESOURCE_ATTRIBUTES win over the entry's default name
    // (explicitly: only the name, where the SDK cannot read the environment).
    resource:
      explicit === undefined
        ? resourceFromAttributes({ "service.name": defaultServiceName }).merge(
            detectResources({ detectors: [envDetector] }),
          )
        : resourceFromAttributes({ "service.name": env.OTEL_SERVICE_NAME || defaultServiceName }),
    sampler: samplerOf(env),
    spanProcessors: [
      new BatchSpanProcessor({
        exporter,
        scheduledDelayMillis: env.OTEL_BSP_SCHEDULE_DELAY,
        maxQueueSize: env.OTEL_BSP_MAX_QUEUE_SIZE,
        maxExportBatchSize: Math.min(
          env.OTEL_BSP_MAX_EXPORT_BATCH_SIZE,
          env.OTEL_BSP_MAX_QUEUE_SIZE,
        ),
        exportTimeoutMillis: env.OTEL_BSP_EXPORT_TIMEOUT,
      }),
    ],
  });
  return {
    tracing: {
      tracer: provider.getTracer("workcell"),
      propagator: new W3CTraceContextPropagator(),
    },
    enabled: true,
    shutdown: () => provider.shutdown(),
    flush: () => provider.forceFlush(),
  };
}

function samplerOf(env: TracingEnv): Sampler {
  const ratio = () => new TraceIdRatioBasedSampler(env.OTEL_TRACES_SAMPLER_ARG ?? 1);
  switch (env.OTEL_TRACES_SAMPLER) {
    case "always_on":
      return new AlwaysOnSampler();
    case "always_off":
      return new AlwaysOffSampler();
    case "traceidratio":
      return ratio();
    case "parentbased_always_on":
      return new ParentBasedSampler({ root: new AlwaysOnSampler() });
    case "parentbased_always_off":
      return new ParentBasedSampler({ root: new AlwaysOffSampler() });
    case "parentbased_traceidratio":
      return new ParentBasedSampler({ root: ratio() });
  }
}
