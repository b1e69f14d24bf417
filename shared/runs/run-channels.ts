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
/**
 * A slot may have become useful (payload: the uid): a run was left waiting in Postgres, or
 * a root run ended and freed one of its uid's `max_concurrent_runs`. Run workers with a
 * free slot LISTEN and claim the next waiting run (docs/decisions/0037); their periodic
 * poll catches a lost notification.
 */
export const RUN_SLOTS_CHANNEL = "workcell_run_slots";
