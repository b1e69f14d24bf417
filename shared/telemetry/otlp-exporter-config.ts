import type { TracingEnv } from "./tracing-env.ts";

/** What the OTLP/HTTP exporter is constructed with when it cannot read OTEL_* itself. */
export type OtlpExporterConfig = {
  url?: string;
  headers?: Record<string, string>;
  timeoutMillis?: number;
};

/**
 * The OTLP exporter's settings from parsed OTEL_* values, for runtimes where its own
 * environment lookup finds nothing: on Cloudflare Workers the bundle holds the exporter's
 * browser build, which never reads the environment (it would send to localhost:4318), and
 * the settings are the request's bindings. The spec's rules: the traces endpoint is used
 * as is, the base endpoint gets `v1/traces` appended; headers are `k=v` pairs separated by
 * commas, values URL-encoded, the traces-specific ones winning.
 */
export function otlpExporterConfigOf(env: TracingEnv): OtlpExporterConfig {
  const url =
    env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ??
    (env.OTEL_EXPORTER_OTLP_ENDPOINT === undefined
      ? undefined
      : `${env.OTEL_EXPORTER_OTLP_ENDPOINT.replace(/\/+$/, "")}/v1/traces`);
  const headers = {
    ...headersOf(env.OTEL_EXPORTER_OTLP_HEADERS),
    ...headersOf(env.OTEL_EXPORTER_OTLP_TRACES_HEADERS),
  };
  const timeout = env.OTEL_EXPORTER_OTLP_TRACES_TIMEOUT ?? env.OTEL_EXPORTER_OTLP_TIMEOUT;
  return {
    ...(url === undefined ? {} : { url }),
    ...(Object.keys(headers).length === 0 ? {} : { headers }),
    ...(timeout === undefined ? {} : { timeoutMillis: timeout }),
  };
}

function headersOf(list: string | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const pair of (list ?? "").split(",")) {
    const at = pair.indexOf("=");
    if (at <= 0) continue;
    out[decodeURIComponent(pair.slice(0, at).trim())] = decodeURIComponent(
      pair.slice(at + 1).trim(),
    );
  }
  return out;
}
