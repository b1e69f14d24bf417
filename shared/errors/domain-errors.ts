import type { ErrorCode } from "./error-catalogue.ts";
import { type ErrorDetails, WorkcellError } from "./workcell-error.ts";

/**
 * Domain-specific failures, each mapped onto one catalogue code.
 *
 * Why a second table instead of more wire codes: docs/api.md fixes the set of `error.code`
 * values clients switch on, so a domain failure travels as its catalogue code and names
 * itself in `error.details.reason` (snake_case, stable). To add one, add a row here:
 * its HTTP status, retry and queue behaviour then follow from the catalogue, and no
 * switch elsewhere needs to change.
 */
interface DomainErrorSpec {
  readonly code: ErrorCode;
  readonly message: string;
}

const DOMAIN_ERROR_TABLE = {
  sandbox_identity_mismatch: {
    code: "conflict",
    message:
      "This execution tree already runs in a sandbox bound to a different Workdir: start a new conversation to work in another Workdir.",
  },
  stale_generation: {
    code: "conflict",
    message:
      "The sandbox was replaced by a newer generation: look it up again before acting on it.",
  },
  lease_lost: {
    code: "conflict",
    message: "Another worker now owns this run: stop writing to it.",
  },
  run_finished: {
    code: "conflict",
    message: "The run has already finished: there is nothing to cancel.",
  },
  approval_decided: {
    code: "conflict",
    message:
      "This approval was already decided (or expired): GET /v1/runs/{run_id}/approvals shows the decision.",
  },
  run_active: {
    code: "conflict",
    message: "A run is still active: cancel it and wait for it to finish first.",
  },
  workdir_busy: {
    code: "conflict",
    message:
      "No checkpoint was taken: a command kept the Workdir busy past the wait bound. Retry when it has ended.",
  },
  name_exists: {
    code: "conflict",
    message:
      "An entry with this name already exists: choose another name or delete the existing one.",
  },
  idempotency_key_reused: {
    code: "conflict",
    message:
      "This Idempotency-Key was used with a different body: send a new key for a new request.",
  },
  workdir_path_not_allowed: {
    code: "unprocessable",
    message:
      "A thread takes its Workdir from its project: remove workdir_path, or create a project with that workdir_path and pass its project_id.",
  },
  network_not_allowed: {
    code: "unprocessable",
    message:
      "agent.network.allow names hosts outside your network policy (GET /v1/network): remove them, or ask an admin to allow them (PUT /v1/admin/users/{uid}/network).",
  },
  network_unavailable: {
    code: "unavailable",
    message:
      "This run asks for network access but the node's egress proxy is not ready: retry (another node may take it) or ask an operator (GET /v1/admin/runtime). The run never gets an open network instead.",
  },
  child_project_mismatch: {
    code: "unprocessable",
    message:
      "A child thread inherits its parent's project: omit project_id or pass the parent's project_id.",
  },
  path_outside_workdir: {
    code: "forbidden",
    message:
      "The path leaves the Workdir: use a Workdir-relative path without '..', '\\' or '://'.",
  },
  symlink_refused: {
    code: "forbidden",
    message: "The path goes through a symbolic link, which is never followed: use the real path.",
  },
  special_file_refused: {
    code: "forbidden",
    message: "Only regular files and directories can be accessed: this entry is neither.",
  },
  workdir_missing: {
    code: "not_found",
    message:
      "The directory does not exist in your workspace: create it first or pick an existing one.",
  },
  attachment_not_uploaded: {
    code: "invalid_request",
    message:
      "An upload is missing or its size differs from the one announced: upload the file again, then confirm.",
  },
  attachment_too_large: {
    code: "payload_too_large",
    message: "The file is larger than the attachment limit: send a smaller file.",
  },
  extraction_limit: {
    code: "unprocessable",
    message:
      "The document needs more memory, CPU time, nesting depth or output than text extraction allows: confirm it without parse, or attach a simpler document.",
  },
  node_quiesced: {
    code: "unavailable",
    message:
      "This node is in maintenance and accepts no new sandboxes: retry, another node will pick it up.",
  },
  sandbox_tier_unavailable: {
    code: "unavailable",
    message:
      "The sandbox tier this run asked for (agent.sandbox) is not ready on this node: ask an operator (GET /v1/admin/runtime says what is missing) or choose the other tier.",
  },
  sandbox_engine_unresponsive: {
    code: "unavailable",
    message:
      "The sandbox engine (Docker) on this node did not answer in time: check that dockerd answers (`docker info`) and raise DOCKER_CALL_TIMEOUT_SECONDS if it is only slow.",
  },
  sandbox_start_failed: {
    code: "unavailable",
    message:
      "The sandbox could not be started for this command, so nothing of the command ran: retry the run; if it persists, ask an operator (GET /v1/admin/runtime and the agent-host log say why).",
  },
  queued_runs_limit: {
    code: "rate_limited",
    message:
      "You have too many runs waiting to start: wait for some to finish (or cancel them), then submit again.",
  },
  requests_per_minute: {
    code: "rate_limited",
    message:
      "Too many requests for your requests_per_minute limit: wait for Retry-After seconds, then retry.",
  },
  event_streams_limit: {
    code: "rate_limited",
    message:
      "Too many event streams open at once: close one (or reuse a stream per run), then retry.",
  },
  database_unavailable: {
    code: "unavailable",
    message:
      "The database did not answer, so this request may or may not have been applied: retry it (a run submitted with the same Idempotency-Key is created at most once), or check GET /healthz.",
  },
  secrets_key_unreachable: {
    code: "unavailable",
    message:
      "The deployment's secrets key (AWS KMS) could not be reached, so nothing was stored or sent: retry.",
  },
  secrets_key_refused: {
    code: "unavailable",
    message:
      "AWS KMS refused the deployment's secrets key, so nothing was stored or sent: an operator must grant this role kms:Encrypt and kms:Decrypt on the key and keep it enabled.",
  },
  no_isolation_available: {
    code: "unavailable",
    message:
      "No sandbox isolation is available on this node: start a Docker daemon (runs never execute unsandboxed).",
  },
} as const satisfies Record<string, DomainErrorSpec>;

export type DomainErrorReason = keyof typeof DOMAIN_ERROR_TABLE;

export const DOMAIN_ERRORS: Readonly<Record<DomainErrorReason, DomainErrorSpec>> =
  Object.freeze(DOMAIN_ERROR_TABLE);

export interface DomainErrorOptions {
  /** Overrides the default message; it is client-facing, so say how to fix it. */
  readonly message?: string;
  /** Merged into `details` next to `reason`. */
  readonly details?: ErrorDetails;
  readonly cause?: unknown;
}

export function domainError(
  reason: DomainErrorReason,
  options: DomainErrorOptions = {},
): WorkcellError {
  const spec = DOMAIN_ERRORS[reason];
  return new WorkcellError(spec.code, options.message ?? spec.message, {
    details: { ...options.details, reason },
    cause: options.cause,
  });
}

export function isDomainErrorReason(value: unknown): value is DomainErrorReason {
  return typeof value === "string" && Object.hasOwn(DOMAIN_ERRORS, value);
}

/** The domain reason an error carries, if it is a WorkcellError made by `domainError`. */
export function domainReasonOf(err: unknown): DomainErrorReason | undefined {
  if (!(err instanceof WorkcellError)) return undefined;
  const reason = err.details?.reason;
  return isDomainErrorReason(reason) ? reason : undefined;
}
