import {
  type DomainErrorReason,
  domainReasonOf,
  type ErrorCode,
  isWorkcellError,
} from "../../../shared/errors/index.ts";
import type { RunError } from "./agent-event.ts";
import type { ToolResult } from "./tool.ts";

/** What the loop does with an error a tool threw. */
export type ToolFailure =
  /** The model is told and the run goes on. */
  | { readonly kind: "refused"; readonly result: ToolResult }
  /** The run was cancelled while the tool ran. */
  | { readonly kind: "cancelled" }
  /** The run cannot go on: it ends `failed` with this error. */
  | { readonly kind: "fatal"; readonly error: RunError };

/**
 * Refusals about the call itself: a bad path, a name that exists, a file too large. The
 * model caused them and can do something else, so they are its business (issue 6: "a path
 * escape is refused and reported to the model, the run continues").
 */
const REFUSAL_CODES: ReadonlySet<ErrorCode> = new Set([
  "invalid_request",
  "unprocessable",
  "forbidden",
  "not_found",
  "conflict",
  "payload_too_large",
  // The UserWorkspace is over its quota (docs/decisions/0050): the model is told what to
  // do (free space, ask for more); every further command is refused the same way.
  "quota_exceeded",
]);

/**
 * 4xx by code, yet about the run's infrastructure, not the call: the sandbox generation
 * is over, the lease is gone. Retrying the tool cannot succeed, and letting the model loop
 * on it would only burn turns, so they end the run.
 */
const FATAL_REASONS: ReadonlySet<DomainErrorReason> = new Set([
  "stale_generation",
  "lease_lost",
  "sandbox_identity_mismatch",
  "node_quiesced",
  "no_isolation_available",
  "sandbox_tier_unavailable",
]);

/**
 * Classifies an error thrown by a tool. Anything not known to be a refusal is fatal: a
 * bug or a broken dependency must show up as a failed run with its code, not be hidden
 * behind a model that keeps retrying.
 */
export function classifyToolError(error: unknown, signal: AbortSignal): ToolFailure {
  if (signal.aborted) return { kind: "cancelled" };
  if (isWorkcellError(error)) {
    const reason = domainReasonOf(error);
    if (REFUSAL_CODES.has(error.code) && (reason === undefined || !FATAL_REASONS.has(reason))) {
      return { kind: "refused", result: refusalResult(error.code, reason, error.message) };
    }
    // The sandbox went away under the call (engine blip, destroy): the command may
    // already have run, so the run must not read as "nothing happened, retry".
    if (reason === "stale_generation") return { kind: "fatal", error: TOOL_INTERRUPTED };
    // Docker stopped answering mid-call: its message says whether the command ran.
    if (reason === "sandbox_engine_unresponsive" && error.details?.command_ran !== "no") {
      return { kind: "fatal", error: { code: TOOL_INTERRUPTED.code, message: error.message } };
    }
    return { kind: "fatal", error: { code: reason ?? error.code, message: error.message } };
  }
  // Not a WorkcellError: its message may carry host paths or internals, so the run
  // reports a generic one and the loop logs the error itself.
  // A retry would repeat whatever the command already did (issue 14 (5)).
  return { kind: "fatal", error: TOOL_INTERRUPTED };
}

/** A tool call cut off after its command may have run (lost engine, a bug mid-call). */
export const TOOL_INTERRUPTED: RunError = Object.freeze({
  code: "tool_interrupted",
  message:
    "The tool call was cut off before its result came back: the command may have completed; check the Workdir before retrying. If it persists, report it to the operator.",
});

/** The result the model sees for a refusal: the code, the reason and how to fix it. */
export function refusalResult(
  code: string,
  reason: string | undefined,
  message: string,
  details: Readonly<Record<string, unknown>> = {},
): ToolResult {
  const label = reason === undefined ? code : `${code}: ${reason}`;
  return {
    isError: true,
    content: `Error (${label}): ${message}`,
    details: { ...details, error_code: code, ...(reason === undefined ? {} : { reason }) },
  };
}
