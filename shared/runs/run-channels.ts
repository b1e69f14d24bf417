/**
 * Postgres NOTIFY channels around runs; the payload is always the run id. Both planes use
 * them (the control plane NOTIFYs cancels and LISTENs for events, the run worker the other
 * way round), so they are defined once, here.
 *
 * A notification only shortens a wait: every listener re-reads the tables, and the
 * heartbeat (cancel) and bounded polling (event streams) catch a lost one.
 */
/** New `run_events` rows of a run: writers NOTIFY it in the transaction that appends. */
export const RUN_EVENTS_CHANNEL = "workcell_run_events";
/** `cancel_requested` was set on a running run: the owning worker LISTENs. */
export const RUN_CANCEL_CHANNEL = "workcell_run_cancel";
