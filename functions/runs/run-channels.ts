/**
 * Postgres NOTIFY channels around runs (payload: the run id). Notifications only shorten
 * waits; every listener re-reads the tables, so a lost one costs latency, never data.
 */
/** A run got new `run_events` rows: event streams wake up. */
export const RUN_EVENTS_CHANNEL = "workcell_run_events";
/** A running run got `cancel_requested`: its worker can stop before its next heartbeat. */
export const RUN_CANCEL_CHANNEL = "workcell_run_cancel";
