import {
  type Attributes,
  type Context,
  defaultTextMapGetter,
  defaultTextMapSetter,
  ProxyTracerProvider,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  SpanStatusCode,
  type TextMapPropagator,
  type Tracer,
  trace,
} from "@opentelemetry/api";

export type { Context as TraceContext } from "@opentelemetry/api";
export { ROOT_CONTEXT, SpanKind };

/**
 * How a process traces (docs/architecture.md §10): a tracer and the propagator that carries
 * trace context across HTTP and queue hops (W3C traceparent/tracestate). Passed in by the
 * entry like every dependency (docs/decisions/0034); no code reads the OpenTelemetry
 * globals. Contexts are passed explicitly too (no async-hooks context manager): the code
 * that starts a span hands its context to what it calls.
 */
export interface Tracing {
  readonly tracer: Tracer;
  readonly propagator: TextMapPropagator;
}

/** A propagator that carries nothing: tracing off. */
const NOOP_PROPAGATOR: TextMapPropagator = {
  inject() {},
  extract: (context) => context,
  fields: () => [],
};

/**
 * Tracing off: OpenTelemetry's no-op tracer (a ProxyTracerProvider with no delegate) and a
 * propagator that carries nothing. No SDK is loaded, spans are not recorded, nothing is
 * injected into messages or headers.
 */
export function noTracing(): Tracing {
  return {
    tracer: new ProxyTracerProvider().getTracer("workcell"),
    propagator: NOOP_PROPAGATOR,
  };
}

export type SpanOptions = {
  readonly parent?: Context;
  readonly kind?: SpanKind;
  readonly attributes?: Attributes;
};

/**
 * Runs `fn` in a span that is a child of `parent` (a new trace without one): the span
 * records a thrown error (its message, never a stack or values) and ends when `fn`
 * settles. `fn` gets the span and the context to pass to what it calls.
 */
export async function inSpan<T>(
  tracing: Tracing,
  name: string,
  options: SpanOptions,
  fn: (span: Span, context: Context) => Promise<T>,
): Promise<T> {
  const parent = options.parent ?? ROOT_CONTEXT;
  const span = tracing.tracer.startSpan(
    name,
    {
      kind: options.kind ?? SpanKind.INTERNAL,
      ...(options.attributes === undefined ? {} : { attributes: options.attributes }),
    },
    parent,
  );
  try {
    return await fn(span, trace.setSpan(parent, span));
  } catch (error) {
    failSpan(span, error);
    throw error;
  } finally {
    span.end();
  }
}

/** Marks a span failed with the error's name (no message: it may carry user data). */
export function failSpan(span: Span, error: unknown): void {
  const name = error instanceof Error ? error.name : "Error";
  const code = (error as { code?: unknown } | null)?.code;
  span.setStatus({ code: SpanStatusCode.ERROR, message: name });
  if (typeof code === "string") span.setAttribute("error.type", code);
}

/** The trace context of `context` as W3C headers / message attributes (empty when off). */
export function injectTrace(tracing: Tracing, context: Context): Record<string, string> {
  const carrier: Record<string, string> = {};
  tracing.propagator.inject(context, carrier, defaultTextMapSetter);
  return carrier;
}

/** The caller's trace context from W3C headers / message attributes (ROOT when none). */
export function extractTrace(
  tracing: Tracing,
  carrier: Readonly<Record<string, string>> | undefined,
): Context {
  if (carrier === undefined) return ROOT_CONTEXT;
  return tracing.propagator.extract(ROOT_CONTEXT, carrier, defaultTextMapGetter);
}
