import { z } from "@hono/zod-openapi";
import { approvalSchema } from "./approval.ts";
import { timestampSchema, uuidSchema } from "./common.ts";
import { networkRequestSchema } from "./network.ts";
import { RUN_STATUSES, runErrorSchema, TERMINAL_RUN_STATUSES } from "./run.ts";

/**
 * One event of `GET /v1/runs/{run_id}/events`. On the wire each is an SSE frame whose
 * `id:` is `seq` (so `Last-Event-ID` resumes after it), `event:` is `type` and
 * `data:` is this object as JSON. `run.completed` is always the last event.
 */
const envelope = {
  seq: z
    .number()
    .int()
    .positive()
    .describe("Position in the run's event stream, from 1, without gaps; the SSE `id`."),
  run_id: uuidSchema.describe("The run."),
  created_at: timestampSchema.describe("When the event was recorded."),
};

const runStatusEvent = z
  .object({
    ...envelope,
    type: z.literal("run.status").describe("Event type."),
    data: z
      .object({ status: z.enum(RUN_STATUSES).describe("The new status.") })
      .describe("Status change."),
  })
  .openapi("RunStatusEvent");

const messageDeltaEvent = z
  .object({
    ...envelope,
    type: z.literal("message.delta").describe("Event type."),
    data: z
      .object({ text: z.string().describe("Next piece of the assistant's reply.") })
      .describe("Streamed text."),
  })
  .openapi("MessageDeltaEvent");

const messageCompletedEvent = z
  .object({
    ...envelope,
    type: z.literal("message.completed").describe("Event type."),
    data: z
      .object({ text: z.string().describe("The assistant's whole message.") })
      .describe("A finished message."),
  })
  .openapi("MessageCompletedEvent");

const toolStartedEvent = z
  .object({
    ...envelope,
    type: z.literal("tool.started").describe("Event type."),
    data: z
      .object({
        tool_call_id: z.string().describe("Pairs this event with its `tool.completed`."),
        name: z.string().describe("Tool name."),
        input: z.unknown().describe("Tool arguments as the model gave them."),
      })
      .describe("A tool call started."),
  })
  .openapi("ToolStartedEvent");

const toolCompletedEvent = z
  .object({
    ...envelope,
    type: z.literal("tool.completed").describe("Event type."),
    data: z
      .object({
        tool_call_id: z.string().describe("The `tool.started` this ends."),
        is_error: z.boolean().describe("True when the tool failed."),
        output: z.unknown().optional().describe("Tool result, possibly truncated."),
        exit_code: z
          .number()
          .int()
          .nullable()
          .optional()
          .describe(
            "`bash` only: the command's exit code; null when it did not exit by itself (timed out or killed).",
          ),
      })
      .describe("A tool call finished."),
  })
  .openapi("ToolCompletedEvent");

const toolOutputEvent = z
  .object({
    ...envelope,
    type: z.literal("tool.output").describe("Event type."),
    data: z
      .object({
        tool_call_id: z
          .string()
          .describe("The running `tool.started` call this output belongs to."),
        stream: z.enum(["stdout", "stderr"]).describe("Which output stream of the command."),
        text: z
          .string()
          .describe(
            "The next piece of that stream as UTF-8 text, in order; a few chunks coalesced, at most a few KiB.",
          ),
        truncated: z
          .boolean()
          .optional()
          .describe(
            "True on the last `tool.output` of the run: its live-output bound is reached and `text` is the marker saying so. `tool.completed` still carries the bounded summary.",
          ),
      })
      .describe("Live output of a running command, as it arrives."),
  })
  .openapi("ToolOutputEvent");

const subagentStartedEvent = z
  .object({
    ...envelope,
    type: z.literal("subagent.started").describe("Event type."),
    data: z
      .object({
        tool_call_id: z.string().describe("The `spawn_subagent` tool call that created the child."),
        run_id: uuidSchema.describe("The child run; its own events are at its own stream."),
        thread_id: uuidSchema.describe("The child's thread (a child of this run's thread)."),
      })
      .describe("A sub-agent run was created and started."),
  })
  .openapi("SubagentStartedEvent");

const subagentCompletedEvent = z
  .object({
    ...envelope,
    type: z.literal("subagent.completed").describe("Event type."),
    data: z
      .object({
        tool_call_id: z.string().describe("The `spawn_subagent` tool call that created the child."),
        run_id: uuidSchema.describe("The child run."),
        status: z.enum(TERMINAL_RUN_STATUSES).describe("How the child ended."),
        error: runErrorSchema.optional().describe("Present when the child failed."),
      })
      .describe("A sub-agent run ended."),
  })
  .openapi("SubagentCompletedEvent");

const networkRequestEvent = z
  .object({
    ...envelope,
    type: z.literal("network.request").describe("Event type."),
    data: networkRequestSchema.describe(
      "One connection the run's sandbox asked the egress proxy for, when it ended (allowed or refused).",
    ),
  })
  .openapi("NetworkRequestEvent");

const approvalRequestedEvent = z
  .object({
    ...envelope,
    type: z.literal("approval.requested").describe("Event type."),
    data: approvalSchema.describe(
      "The run waits for a person: the approval it asked for (decide it with POST /v1/runs/{run_id}/approvals/{approval_id}).",
    ),
  })
  .openapi("ApprovalRequestedEvent");

const approvalResolvedEvent = z
  .object({
    ...envelope,
    type: z.literal("approval.resolved").describe("Event type."),
    data: z
      .object({
        approval_id: uuidSchema.describe("The approval."),
        status: z.enum(["approved", "denied", "expired"]).describe("How it was decided."),
        decided_by: z.string().optional().describe("Who decided."),
        note: z.string().optional().describe("The decider's note."),
      })
      .describe("An approval was decided (or expired); the run goes on."),
  })
  .openapi("ApprovalResolvedEvent");
const checkpointCreatedEvent = z
  .object({
    ...envelope,
    type: z.literal("checkpoint.created").describe("Event type."),
    data: z
      .object({
        checkpoint_id: uuidSchema.describe(
          "Restore it to undo this run (POST …/checkpoints/{id}/restore).",
        ),
        files: z.number().int().nonnegative().describe("Regular files it holds."),
        bytes: z.number().int().nonnegative().describe("Their logical size."),
        mode: z.enum(["reflink", "copy"]).describe("How the node copied it."),
      })
      .describe(
        "The Workdir was checkpointed before the run's first command (`agent.checkpoint`).",
      ),
  })
  .openapi("CheckpointCreatedEvent");

const runCompletedEvent = z
  .object({
    ...envelope,
    type: z.literal("run.completed").describe("Event type."),
    data: z
      .object({
        status: z.enum(TERMINAL_RUN_STATUSES).describe("How the run ended."),
        error: runErrorSchema.optional().describe("Present when the run failed."),
        exit_code: z
          .number()
          .int()
          .optional()
          .describe(
            "Runs of the `shell` model only: the exit code of the one command the run executed (a run whose command exits 3 still `succeeded`; clients that run one command report this code).",
          ),
      })
      .describe("The run ended; nothing follows."),
  })
  .openapi("RunCompletedEvent");

export const RUN_EVENT_TYPES = [
  "run.status",
  "message.delta",
  "message.completed",
  "tool.started",
  "tool.output",
  "tool.completed",
  "subagent.started",
  "subagent.completed",
  "network.request",
  "approval.requested",
  "approval.resolved",
  "checkpoint.created",
  "run.completed",
] as const;

export const runEventSchema = z
  .discriminatedUnion("type", [
    runStatusEvent,
    messageDeltaEvent,
    messageCompletedEvent,
    toolStartedEvent,
    toolOutputEvent,
    toolCompletedEvent,
    subagentStartedEvent,
    subagentCompletedEvent,
    networkRequestEvent,
    approvalRequestedEvent,
    approvalResolvedEvent,
    checkpointCreatedEvent,
    runCompletedEvent,
  ])
  .openapi("RunEvent")
  .describe("One event of a run's event stream.");

export type RunEvent = z.infer<typeof runEventSchema>;
export type RunEventType = RunEvent["type"];

/** The stream ends after this event. */
export function isTerminalRunEvent(event: RunEvent): boolean {
  return event.type === "run.completed";
}

/** `POST /v1/runs/{run_id}/events/ticket` */
export const eventTicketSchema = z
  .object({
    url: z
      .url()
      .describe(
        "Opens this run's event stream without an Authorization header: `new EventSource(url)`. Reconnects (with Last-Event-ID) work with the same URL until `expires_at`.",
      ),
    expires_at: timestampSchema.describe("The ticket stops opening the stream at this time."),
  })
  .openapi("EventTicket")
  .describe("A URL that reads this one run's events and nothing else, for at most an hour.");

export type EventTicketResponse = z.infer<typeof eventTicketSchema>;
