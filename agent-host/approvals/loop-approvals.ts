import type { RunError } from "../runs/agent/agent-event.ts";
import type { ChatMessage, TokenUsage, ToolCall } from "../runs/agent/chat-message.ts";

/**
 * Where an agent loop stopped to wait for a person (docs/architecture.md §14): what it had
 * said and done so far, and the tool calls of its last turn not yet run, the first of which
 * waits. Stored as the approval's `resume_state`, so any node goes on from it.
 */
export interface LoopPause {
  readonly newMessages: readonly ChatMessage[];
  /** The waiting call first, then the calls after it in the same assistant message. */
  readonly pendingCalls: readonly ToolCall[];
  readonly turns: number;
  readonly usage: TokenUsage;
  readonly lastExitCode?: number;
}

/** The decision a resumed loop applies to its first pending call. */
export type ResumeDecision =
  | {
      readonly approved: true;
      /**
       * Checks the call against what was approved and marks the approval used, once: a
       * RunError (the run fails with it, the call never runs) when either fails.
       */
      readonly claim: () => Promise<RunError | undefined>;
    }
  | {
      readonly approved: false;
      /** What the agent gets as the call's result ("Denied by …"). */
      readonly refusal: string;
      readonly error: RunError;
    };

/** The loop's approval hooks (drive-run builds them from the run's policy). */
export interface LoopApprovals {
  /** True when this call must wait for a person before it runs. */
  readonly needsApproval: (call: ToolCall) => boolean;
  /** A decided pause to go on from, instead of starting with a model call. */
  readonly resume?: { readonly pause: LoopPause; readonly decision: ResumeDecision };
  /** The `shell` model cannot react to a refusal: a denial fails the run (approval_denied). */
  readonly denialFails: boolean;
}
