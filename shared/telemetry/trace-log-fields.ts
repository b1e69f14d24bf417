import { type Context, isSpanContextValid, trace } from "@opentelemetry/api";

/**
 * `trace_id` and `span_id` of the span in `context`, for log lines, so that a line and
 * its trace lead to each other; none when tracing is off (the no-op tracer's spans carry
 * no valid context) or there is no span.
 */
export function traceLogFields(context: Context | undefined): Record<string, string> {
  const span = context === undefined ? undefined : trace.getSpanContext(context);
  if (span === undefined || !isSpanContextValid(span)) return {};
  return { trace_id: span.traceId, span_id: span.spanId };
}
