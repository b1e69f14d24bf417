import { defaultTextMapSetter, ROOT_CONTEXT, trace } from "@opentelemetry/api";
import { expect, it } from "vitest";
import { EnvError } from "../../../shared/env/env-error.ts";
import { parseEnv } from "../../../shared/env/parse-env.ts";
import { otlpExporterConfigOf } from "../../../shared/telemetry/otlp-exporter-config.ts";
import { startTracing } from "../../../shared/telemetry/start-tracing.ts";
import { tracesExporterOf, tracingEnvSchema } from "../../../shared/telemetry/tracing-env.ts";

const exporterOf = (env: Record<string, string>) =>
  tracesExporterOf(parseEnv(tracingEnvSchema, env));

it("tracing is off by default and on only when an exporter or an OTLP endpoint is named", () => {
  expect(exporterOf({})).toBe("none");
  expect(exporterOf({ OTEL_TRACES_EXPORTER: "otlp" })).toBe("otlp");
  expect(exporterOf({ OTEL_TRACES_EXPORTER: "console" })).toBe("console");
  expect(exporterOf({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318" })).toBe("otlp");
  expect(exporterOf({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "http://c:4318/v1/traces" })).toBe(
    "otlp",
  );
  expect(
    exporterOf({ OTEL_TRACES_EXPORTER: "none", OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318" }),
  ).toBe("none");
  expect(exporterOf({ OTEL_SDK_DISABLED: "true", OTEL_TRACES_EXPORTER: "otlp" })).toBe("none");
});

it("a bad OTEL_* value stops the entry with the variable named", () => {
  for (const env of [
    { OTEL_TRACES_EXPORTER: "jaeger" },
    { OTEL_EXPORTER_OTLP_PROTOCOL: "grpc" },
    { OTEL_TRACES_SAMPLER: "sometimes" },
    { OTEL_TRACES_SAMPLER_ARG: "2" },
  ]) {
    const variable = Object.keys(env)[0] as string;
    expect(() => parseEnv(tracingEnvSchema, env)).toThrow(EnvError);
    expect(() => parseEnv(tracingEnvSchema, env)).toThrow(variable);
  }
});

it("off: spans are not recorded and nothing is propagated", async () => {
  const started = await startTracing(parseEnv(tracingEnvSchema, {}), "test");
  expect(started.enabled).toBe(false);
  const span = started.tracing.tracer.startSpan("x");
  expect(span.isRecording()).toBe(false);
  const carrier: Record<string, string> = {};
  started.tracing.propagator.inject(
    trace.setSpan(ROOT_CONTEXT, span),
    carrier,
    defaultTextMapSetter,
  );
  expect(carrier).toEqual({});
  await started.shutdown();
});

it("on: a recording tracer and W3C propagation", async () => {
  const started = await startTracing(
    parseEnv(tracingEnvSchema, {
      OTEL_TRACES_EXPORTER: "console",
      OTEL_TRACES_SAMPLER: "always_on",
    }),
    "test",
  );
  expect(started.enabled).toBe(true);
  const span = started.tracing.tracer.startSpan("x");
  expect(span.isRecording()).toBe(true);
  const carrier: Record<string, string> = {};
  started.tracing.propagator.inject(
    trace.setSpan(ROOT_CONTEXT, span),
    carrier,
    defaultTextMapSetter,
  );
  expect(carrier.traceparent).toBe(
    `00-${span.spanContext().traceId}-${span.spanContext().spanId}-01`,
  );
  // Not ended: the console exporter prints nothing, and shutdown has nothing to flush.
  await started.shutdown();
});

it("the exporter's settings from OTEL_* values, for runtimes whose exporter reads no environment", () => {
  const configOf = (env: Record<string, string>) =>
    otlpExporterConfigOf(parseEnv(tracingEnvSchema, env));
  expect(configOf({})).toEqual({});
  // The base endpoint gets the signal's path; the traces endpoint is used as is and wins.
  expect(configOf({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318/" })).toEqual({
    url: "http://c:4318/v1/traces",
  });
  expect(
    configOf({
      OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318",
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "http://t:4318/custom",
    }),
  ).toEqual({ url: "http://t:4318/custom" });
  // Headers: comma-separated k=v, values URL-decoded, the traces-specific ones winning.
  expect(
    configOf({
      OTEL_EXPORTER_OTLP_HEADERS: "authorization=Bearer%20abc, x-team=core,broken",
      OTEL_EXPORTER_OTLP_TRACES_HEADERS: "x-team=traces",
      OTEL_EXPORTER_OTLP_TIMEOUT: "2500",
    }),
  ).toEqual({
    headers: { authorization: "Bearer abc", "x-team": "traces" },
    timeoutMillis: 2500,
  });
});
