import { domainError } from "../../../shared/errors/domain-errors.ts";

/**
 * What is known about the command when a Docker call does not answer: `no` (it was never
 * started), `maybe` (the start was sent; it may be running or done), `yes` (it ran; only
 * its result is unknown). A run reads it to say "nothing ran" or "check the Workdir".
 */
export type CommandRan = "no" | "maybe" | "yes";

export type DockerCallBound = {
  /** Longest one Docker API call may take (sandboxConfig.dockerCallTimeoutMs). */
  timeoutMs: number;
  /** What the call does, for the message: "to create the exec". */
  purpose: string;
  commandRan?: CommandRan;
};

/**
 * Runs one Docker API call with the caller's signal and its own deadline. dockerode has
 * no timeout of its own (docker-modem's `timeout` is a socket idle timeout that would
 * also cut a quiet exec stream), so a hung engine or socket would hang the call for
 * ever. When the deadline (not the caller) ends it, the error says so, what is known
 * about the command and what to do; the caller's own abort keeps its usual error.
 */
export async function boundedDockerCall<T>(
  bound: DockerCallBound,
  signal: AbortSignal,
  call: (signal: AbortSignal) => Promise<T>,
): Promise<T> {
  const deadline = AbortSignal.timeout(bound.timeoutMs);
  try {
    return await call(AbortSignal.any([signal, deadline]));
  } catch (error) {
    if (signal.aborted) throw error;
    if (deadline.aborted) throw dockerUnresponsive(bound, error);
    // The socket is gone or refuses (dockerd stopped, its socket removed, a proxy cut):
    // the same outage as a hang, only noticed sooner, and the same answer for the run.
    if (isConnectionError(error)) throw dockerUnreachable(bound, error);
    throw error;
  }
}

/** Errors of the connection to the engine itself, not answers of the engine (no HTTP status). */
const CONNECTION_ERRORS = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ENOENT",
  "EPIPE",
  "ECONNABORTED",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "ETIMEDOUT",
]);

export function isConnectionError(error: unknown): boolean {
  const e = error as { code?: unknown; statusCode?: unknown } | undefined;
  if (e === undefined || e === null || typeof e.statusCode === "number") return false;
  // docker-modem reports a socket closed mid-answer as a plain Error with this text.
  if (error instanceof Error && /socket hang up/i.test(error.message)) return true;
  return typeof e.code === "string" && CONNECTION_ERRORS.has(e.code);
}

/** The error for a Docker call whose connection failed (socket gone, refused, reset). */
export function dockerUnreachable(bound: DockerCallBound, cause?: unknown): Error {
  const known = commandRanText(bound.commandRan);
  return domainError("sandbox_engine_unresponsive", {
    message: `Docker could not be reached ${bound.purpose}${known}: check that dockerd on this node runs and its socket answers (docker info).`,
    details: {
      unreachable: true,
      ...(bound.commandRan === undefined ? {} : { command_ran: bound.commandRan }),
    },
    cause,
  });
}

/** The error for a Docker call that did not answer within its bound. */
export function dockerUnresponsive(bound: DockerCallBound, cause?: unknown): Error {
  const seconds = Math.ceil(bound.timeoutMs / 1000);
  const known = commandRanText(bound.commandRan);
  return domainError("sandbox_engine_unresponsive", {
    message: `Docker did not answer within ${seconds} s ${bound.purpose}${known}: check that dockerd on this node answers (docker info); raise DOCKER_CALL_TIMEOUT_SECONDS if it is only slow.`,
    details: bound.commandRan === undefined ? {} : { command_ran: bound.commandRan },
    cause,
  });
}

function commandRanText(ran: CommandRan | undefined): string {
  switch (ran) {
    case undefined:
      return "";
    case "no":
      return "; the command did not run";
    case "maybe":
      return "; the command may have run: check the Workdir before retrying";
    case "yes":
      return "; the command ran but its result is unknown: check the Workdir before retrying";
  }
}
