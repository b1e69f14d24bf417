import { expect } from "vitest";
import type { CollectedSpan } from "../../../support/otlp-collector.ts";

/** OTLP SpanKind numbers, as an export carries them. */
export const SPAN_KIND = { internal: 1, server: 2, client: 3, producer: 4, consumer: 5 } as const;

/** The one span of `service` named `name`; throws with every span's name otherwise. */
export function oneSpan(spans: CollectedSpan[], service: string, name: string): CollectedSpan {
  const found = spans.filter((s) => s.service === service && s.name === name);
  if (found.length !== 1) {
    throw new Error(
      `expected one ${service} span '${name}', got ${found.length}: ${spans.map((s) => `${s.service}:${s.name}`)}`,
    );
  }
  return found[0] as CollectedSpan;
}

export interface DispatchSpans {
  readonly request: CollectedSpan;
  readonly publish: CollectedSpan;
  readonly consume: CollectedSpan;
  readonly execute: CollectedSpan;
}

/**
 * Asserts the spine of a submitted run's trace, shared by every entry (Node and Workers):
 * `POST /v1/runs` continues the caller's span, its queue publish is the request's child,
 * the agent-host's consume is the publish's child (the queue hop) and `run.execute` the
 * consume's child. Returns the four spans for the entry's own further checks.
 */
export function expectDispatchTrace(
  spans: CollectedSpan[],
  expected: { entryService: string; agentHostService: string; callerSpanId: string; runId: string },
): DispatchSpans {
  const { entryService, agentHostService: A } = expected;
  const request = oneSpan(spans, entryService, "POST /v1/runs");
  expect(request.kind).toBe(SPAN_KIND.server);
  expect(request.parentSpanId).toBe(expected.callerSpanId);
  expect(request.attributes["http.response.status_code"]).toBe(202);
  const publish = oneSpan(spans, entryService, "run.dispatch publish");
  expect(publish.kind).toBe(SPAN_KIND.producer);
  expect(publish.parentSpanId).toBe(request.spanId);
  expect(publish.attributes["workcell.run_id"]).toBe(expected.runId);
  const consume = oneSpan(spans, A, "run.dispatch process");
  expect(consume.kind).toBe(SPAN_KIND.consumer);
  expect(consume.parentSpanId).toBe(publish.spanId);
  const execute = oneSpan(spans, A, "run.execute");
  expect(execute.parentSpanId).toBe(consume.spanId);
  return { request, publish, consume, execute };
}
