// A Tracing a bench switches on for one series of runs and off for the rest: the stack is
// started once with it, and the spans recorded while on go to an in-memory exporter (the
// SDK's BatchSpanProcessor, as a deployment's), taken when the series is done.
import { W3CTraceContextPropagator } from "@opentelemetry/core";
import {
  BatchSpanProcessor,
  InMemorySpanExporter,
  type ReadableSpan,
  TracerProvider,
} from "@opentelemetry/sdk-trace";
import { noTracing, type Tracing } from "../../shared/telemetry/tracing.ts";

/** A Tracing that records only while `on` is set (the other series run untraced). */
export type SwitchedTracing = {
  tracing: Tracing;
  set(on: boolean): void;
  /** Flushes and returns the spans recorded so far, then forgets them. */
  take(): Promise<ReadableSpan[]>;
  shutdown(): Promise<void>;
};

export function switchedTracing(): SwitchedTracing {
  const exporter = new InMemorySpanExporter();
  const provider = new TracerProvider({
    spanProcessors: [new BatchSpanProcessor({ exporter, scheduledDelayMillis: 200 })],
  });
  const on: Tracing = {
    tracer: provider.getTracer("bench"),
    propagator: new W3CTraceContextPropagator(),
  };
  const off = noTracing();
  let current = off;
  const tracing: Tracing = {
    tracer: {
      startSpan: (...args) => current.tracer.startSpan(...args),
      startActiveSpan: ((...args: Parameters<Tracing["tracer"]["startActiveSpan"]>) =>
        // biome-ignore lint/suspicious/noExplicitAny: the overloads forward as they are
        (current.tracer.startActiveSpan as any)(...args)) as Tracing["tracer"]["startActiveSpan"],
    },
    propagator: {
      inject: (...args) => current.propagator.inject(...args),
      extract: (...args) => current.propagator.extract(...args),
      fields: () => current.propagator.fields(),
    },
  };
  return {
    tracing,
    set: (value) => {
      current = value ? on : off;
    },
    take: async () => {
      await provider.forceFlush();
      const spans = exporter.getFinishedSpans();
      exporter.reset();
      return [...spans];
    },
    shutdown: () => provider.shutdown(),
  };
}
