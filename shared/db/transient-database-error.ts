import { sqlStateOf } from "./pg-error.ts";

// postgres.js's own codes for a connection that went away or never came.
const DRIVER_CODES = new Set([
  "CONNECTION_CLOSED",
  "CONNECTION_ENDED",
  "CONNECTION_DESTROYED",
  "CONNECT_TIMEOUT",
]);
const SYSTEM_CODES = new Set(["ECONNREFUSED", "ECONNRESET", "EPIPE", "ETIMEDOUT", "EHOSTUNREACH"]);
// 57P01-03: the server is shutting down, crashed or is starting; 08xxx: connection exceptions.
const TRANSIENT_SQLSTATE = /^(?:08...|57P0[123])$/;
const MAX_CAUSE_DEPTH = 5;

/**
 * True for a failure that says nothing about the statement, only that the database could
 * not be asked (a closed or refused connection, a server restarting, an attempt that did
 * not answer in time): the same statement may be tried again. Constraint and fence
 * failures are never transient.
 */
export function isTransientDatabaseError(error: unknown): boolean {
  return isDatabaseConnectionError(error) || hasInChain(error, (e) => e.name === "TimeoutError");
}

/**
 * True for a failure the database's connection itself names: closed, refused, reset, or a
 * server restarting (not a deadline of ours, which other dependencies share).
 */
export function isDatabaseConnectionError(error: unknown): boolean {
  const state = sqlStateOf(error);
  if (state !== undefined) return TRANSIENT_SQLSTATE.test(state);
  return hasInChain(
    error,
    (e) => typeof e.code === "string" && (DRIVER_CODES.has(e.code) || SYSTEM_CODES.has(e.code)),
  );
}

function hasInChain(error: unknown, test: (e: { code?: unknown; name?: unknown }) => boolean) {
  let e = error;
  for (let depth = 0; e !== null && typeof e === "object" && depth < MAX_CAUSE_DEPTH; depth++) {
    if (test(e as { code?: unknown; name?: unknown })) return true;
    e = (e as { cause?: unknown }).cause;
  }
  return false;
}
