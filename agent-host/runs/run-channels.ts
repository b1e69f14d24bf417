/**
 * Postgres NOTIFY channels around runs; the payload is always the run id. They must be
 * the same strings as functions/runs/run-channels.ts (the control plane NOTIFYs cancels
 * and LISTENs for events); agent-host does not import functions/, so they are repeated
 * here and a unit test compares the two.
 *
 * A notification only shortens a wait: every listener re-reads the tables, and the
 * heartbeat (cancel) and bounded polling (event streams) catch a lost one.
 */
/** New `run_events` rows of a run: the worker NOTIFYs it in the transaction that appends. */
export const RUN_EVENTS_CHANNEL = "workcell_run_events";
/** `cancel_requested` was set on a running run: the owning worker LISTENs. */
export const RUN_CANCEL_CHANNEL = "workcell_run_cancel";
