import { z } from "zod";
import { decimalVar, intVar } from "../env/env-vars.ts";

/**
 * The standard OpenTelemetry variables Workcell reads for traces
 * (https://opentelemetry.io/docs/specs/otel/configuration/sdk-environment-variables/).
 * Tracing is off unless asked for: `OTEL_TRACES_EXPORTER=otlp|console`, or an OTLP
 * endpoint set without an exporter (someone who names a collector wants to export to
 * it). `OTEL_SDK_DISABLED=true` wins over everything. The OTLP exporter itself reads
 * `OTEL_EXPORTER_OTLP_*` (endpoint, headers, timeout, compression); the SDK reads
 * `OTEL_SERVICE_NAME` and `OTEL_RESOURCE_ATTRIBUTES` through its env detector.
 */
export const tracingEnvSchema = z.object({
  OTEL_SDK_DISABLED: z
    .enum(["true", "false"])
    .optional()
    .describe("`true` turns tracing off whatever else is set."),
  OTEL_TRACES_EXPORTER: z
    .enum(["none", "otlp", "console"])
    .optional()
    .describe(
      "`otlp` (OTLP/HTTP, JSON bodies), `console` (spans on stdout) or `none` (default, unless an OTLP endpoint is set).",
    ),
  OTEL_EXPORTER_OTLP_ENDPOINT: z.url().optional().describe("Base URL of the OTLP/HTTP collector."),
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: z
    .url()
    .optional()
    .describe("Full URL for traces (…/v1/traces); overrides OTEL_EXPORTER_OTLP_ENDPOINT."),
  // Read by the Node exporter itself; parsed here for the Workers entry, whose exporter
  // build reads no environment (otlp-exporter-config.ts). Secrets (API keys): never logged.
  OTEL_EXPORTER_OTLP_HEADERS: z
    .string()
    .optional()
    .describe("Headers of every OTLP export, `k=v` pairs separated by commas."),
  OTEL_EXPORTER_OTLP_TRACES_HEADERS: z
    .string()
    .optional()
    .describe("Headers of trace exports; win over OTEL_EXPORTER_OTLP_HEADERS."),
  OTEL_EXPORTER_OTLP_TIMEOUT: intVar(1, 3_600_000)
    .optional()
    .describe("Milliseconds one export may take (default 10000)."),
  OTEL_EXPORTER_OTLP_TRACES_TIMEOUT: intVar(1, 3_600_000)
    .optional()
    .describe("Milliseconds one trace export may take; wins over OTEL_EXPORTER_OTLP_TIMEOUT."),
  OTEL_SERVICE_NAME: z
    .string()
    .optional()
    .describe("The service name of the spans (default per entry, e.g. workcell-functions)."),
  OTEL_EXPORTER_OTLP_PROTOCOL: z
    .literal("http/json", {
      error: "only http/json is supported: unset it or set it to http/json",
    })
    .optional(),
  OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: z
    .literal("http/json", {
      error: "only http/json is supported: unset it or set it to http/json",
    })
    .optional(),
  OTEL_TRACES_SAMPLER: z
    .enum([
      "always_on",
      "always_off",
      "traceidratio",
      "parentbased_always_on",
      "parentbased_always_off",
      "parentbased_traceidratio",
    ])
    .default("parentbased_always_on")
    .describe("Which traces are recorded (default parentbased_always_on)."),
  OTEL_TRACES_SAMPLER_ARG: decimalVar(0, 1)
    .optional()
    .describe("The ratio of the *traceidratio samplers, 0 to 1 (default 1)."),
  OTEL_BSP_SCHEDULE_DELAY: intVar(0, 3_600_000)
    .default(5_000)
    .describe("Milliseconds between two exports of finished spans (default 5000)."),
  OTEL_BSP_MAX_QUEUE_SIZE: intVar(1, 1_000_000).default(2_048),
  OTEL_BSP_MAX_EXPORT_BATCH_SIZE: intVar(1, 1_000_000).default(512),
  OTEL_BSP_EXPORT_TIMEOUT: intVar(1, 3_600_000).default(30_000),
});

export type TracingEnv = z.output<typeof tracingEnvSchema>;

/** Which exporter the environment asks for; `none` means tracing stays off (no SDK loaded). */
export function tracesExporterOf(env: TracingEnv): "none" | "otlp" | "console" {
  if (env.OTEL_SDK_DISABLED === "true") return "none";
  if (env.OTEL_TRACES_EXPORTER !== undefined) return env.OTEL_TRACES_EXPORTER;
  const endpoint = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ?? env.OTEL_EXPORTER_OTLP_ENDPOINT;
  return endpoint === undefined ? "none" : "otlp";
}
