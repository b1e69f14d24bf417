import type { MessageAttributeValue } from "@aws-sdk/client-sqs";
import { safeRequestId } from "../http/request-context.ts";

/** The W3C fields a trace context travels in, as SQS message attributes (docs/architecture.md §10). */
export const TRACE_MESSAGE_ATTRIBUTES = ["traceparent", "tracestate"] as const;

/** A propagator's carrier as SQS message attributes (String type). */
export function traceMessageAttributes(
  carrier: Readonly<Record<string, string>>,
): Record<string, MessageAttributeValue> | undefined {
  const attributes: Record<string, MessageAttributeValue> = {};
  for (const name of TRACE_MESSAGE_ATTRIBUTES) {
    const value = carrier[name];
    if (value !== undefined) attributes[name] = { DataType: "String", StringValue: value };
  }
  return Object.keys(attributes).length === 0 ? undefined : attributes;
}

/** The carrier back from a received message's attributes (only the trace fields). */
export function traceCarrierOf(
  attributes: Readonly<Record<string, MessageAttributeValue>> | undefined,
): Record<string, string> | undefined {
  if (attributes === undefined) return undefined;
  const carrier: Record<string, string> = {};
  for (const name of TRACE_MESSAGE_ATTRIBUTES) {
    const value = attributes[name]?.StringValue;
    if (value !== undefined) carrier[name] = value;
  }
  return Object.keys(carrier).length === 0 ? undefined : carrier;
}

/**
 * The id of the API request a message was sent for (`skills.refresh`: a run's is stored with
 * the run instead, docs/decisions/0059), so the consumer's log lines name it (decision 0069).
 */
export const REQUEST_ID_MESSAGE_ATTRIBUTE = "request_id";

/** Every attribute a consumer asks SQS for: the trace fields and the request id. */
export const CONSUMED_MESSAGE_ATTRIBUTES = [
  ...TRACE_MESSAGE_ATTRIBUTES,
  REQUEST_ID_MESSAGE_ATTRIBUTE,
] as const;

/** The request id a received message carries, if any and safe to log (as X-Request-Id's rule). */
export function requestIdOf(
  attributes: Readonly<Record<string, MessageAttributeValue>> | undefined,
): string | undefined {
  return safeRequestId(attributes?.[REQUEST_ID_MESSAGE_ATTRIBUTE]?.StringValue);
}
