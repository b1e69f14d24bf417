import { z } from "@hono/zod-openapi";
import { WorkcellError } from "../errors/workcell-error.ts";
import { utf8ByteLength } from "../paths/text-checks.ts";
import { uidSchema, uuidSchema } from "./common.ts";
import { type ContractResult, invalidRequestFromZod } from "./contract-result.ts";

/** SQS's maximum message size; a bigger body is not one of ours. */
export const MAX_QUEUE_MESSAGE_BYTES = 256 * 1024;

// Queue messages are not strict: during a rolling deploy an older consumer may receive
// a message with fields added by a newer producer, and must still act on what it knows.

/** A committed run waiting for a worker (docs/architecture.md §4.7). */
export const runDispatchMessageSchema = z
  .object({
    type: z.literal("run.dispatch").describe("Message type."),
    run_id: uuidSchema.describe("The run to claim and execute."),
  })
  .describe("Dispatch a committed run to a worker.");

/** Rebuild a user's skill projection after a grant changed (docs/architecture.md §6). */
export const skillsRefreshMessageSchema = z
  .object({
    type: z.literal("skills.refresh").describe("Message type."),
    uid: uidSchema.describe("The user whose projection to refresh."),
  })
  .describe("Refresh one user's skill projection.");

export const queueMessageSchema = z
  .discriminatedUnion("type", [runDispatchMessageSchema, skillsRefreshMessageSchema])
  .describe("A message on the run queue.");

export type QueueMessage = z.infer<typeof queueMessageSchema>;
export type QueueMessageType = QueueMessage["type"];
export type RunDispatchMessage = z.infer<typeof runDispatchMessageSchema>;
export type SkillsRefreshMessage = z.infer<typeof skillsRefreshMessageSchema>;

/**
 * Parses a queue message body (the raw SQS string, or an already decoded value). Never
 * throws: garbage is an expected input on a queue, and the `invalid_request` error it
 * returns makes `queueDisposition` dead-letter it instead of retrying forever.
 */
export function parseQueueMessage(raw: unknown): ContractResult<QueueMessage> {
  let value = raw;
  if (typeof raw === "string") {
    if (utf8ByteLength(raw) > MAX_QUEUE_MESSAGE_BYTES) {
      return invalid(`The queue message is larger than ${MAX_QUEUE_MESSAGE_BYTES} bytes.`);
    }
    try {
      value = JSON.parse(raw);
    } catch {
      return invalid("The queue message is not valid JSON.");
    }
  }
  const result = queueMessageSchema.safeParse(value);
  if (result.success) return { ok: true, value: result.data };
  return { ok: false, error: invalidRequestFromZod(result.error, "queue message") };
}

/** The body to send for a message; validated so a producer bug fails at the producer. */
export function serializeQueueMessage(message: QueueMessage): string {
  return JSON.stringify(queueMessageSchema.parse(message));
}

function invalid(message: string): ContractResult<never> {
  return { ok: false, error: new WorkcellError("invalid_request", message) };
}
