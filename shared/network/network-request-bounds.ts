/**
 * Connections of one run kept as audit rows (GET /v1/runs/{id}/network); past it they are
 * only counted (workcell_egress_connections_total) and the list says `truncated`. Bounded
 * so a sandbox that connects in a loop cannot fill Postgres.
 */
export const MAX_NETWORK_REQUESTS_PER_RUN = 1000;
