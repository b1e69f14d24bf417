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
