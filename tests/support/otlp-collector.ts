import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { conditionWaiters } from "./condition-waiters.ts";

/** A span as an OTLP/HTTP JSON export carries it, with its process's service name. */
export type CollectedSpan = {
  service: string;
  traceId: string;
  spanId: string;
  parentSpanId: string | undefined;
  name: string;
  /** OTLP SpanKind: 1 internal, 2 server, 3 client, 4 producer, 5 consumer. */
  kind: number;
  attributes: Record<string, unknown>;
};

export type OtlpCollector = {
  /** `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` for the processes under test. */
  tracesUrl: string;
  spans(): CollectedSpan[];
  /** The `authorization` header of each export received (undefined when absent). */
  authorizations(): (string | undefined)[];
  /** Resolves once `done(spans)` holds for what was received (checked at each export). */
  until(done: (spans: CollectedSpan[]) => boolean, timeoutMs?: number): Promise<CollectedSpan[]>;
  close(): Promise<void>;
};

type AnyValue = {
  stringValue?: string;
  intValue?: string | number;
  boolValue?: boolean;
  doubleValue?: number;
  arrayValue?: { values?: AnyValue[] };
};
type KeyValue = { key: string; value: AnyValue };
type ExportRequest = {
  resourceSpans?: {
    resource?: { attributes?: KeyValue[] };
    scopeSpans?: {
      spans?: {
        traceId: string;
        spanId: string;
        parentSpanId?: string;
        name: string;
        kind: number;
        attributes?: KeyValue[];
      }[];
    }[];
  }[];
};

/**
 * An OTLP/HTTP receiver (JSON encoding, `POST /v1/traces`) in the test process: the
 * processes under test export to it with the SDK's real OTLP exporter, as they would to a
 * collector, so their spans (and the parent links between them) can be asserted.
 */
export async function startOtlpCollector(): Promise<OtlpCollector> {
  const spans: CollectedSpan[] = [];
  const authorizations: (string | undefined)[] = [];
  const waiters = conditionWaiters();
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      if (req.method !== "POST" || req.url !== "/v1/traces") {
        res.writeHead(404).end();
        return;
      }
      authorizations.push(req.headers.authorization);
      const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as ExportRequest;
      for (const rs of body.resourceSpans ?? []) {
        const resource = attributesOf(rs.resource?.attributes);
        for (const ss of rs.scopeSpans ?? []) {
          for (const s of ss.spans ?? []) {
            spans.push({
              service: String(resource["service.name"]),
              traceId: s.traceId,
              spanId: s.spanId,
              parentSpanId: s.parentSpanId === "" ? undefined : s.parentSpanId,
              name: s.name,
              kind: s.kind,
              attributes: attributesOf(s.attributes),
            });
          }
        }
      }
      res.writeHead(200, { "content-type": "application/json" }).end("{}");
      waiters.changed();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    tracesUrl: `http://127.0.0.1:${port}/v1/traces`,
    spans: () => [...spans],
    authorizations: () => [...authorizations],
    async until(done, timeoutMs = 60_000) {
      await waiters.until(
        () => done(spans),
        timeoutMs,
        () => `spans not complete after ${timeoutMs} ms: ${names(spans)}`,
      );
      return [...spans];
    },
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

function names(spans: CollectedSpan[]): string {
  return spans.map((s) => `${s.service}:${s.name}`).join(", ");
}

function attributesOf(list: KeyValue[] | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const { key, value } of list ?? []) out[key] = anyValue(value);
  return out;
}

function anyValue(v: AnyValue): unknown {
  if (v.stringValue !== undefined) return v.stringValue;
  if (v.intValue !== undefined) return Number(v.intValue);
  if (v.boolValue !== undefined) return v.boolValue;
  if (v.doubleValue !== undefined) return v.doubleValue;
  if (v.arrayValue !== undefined) return (v.arrayValue.values ?? []).map(anyValue);
  return undefined;
}
