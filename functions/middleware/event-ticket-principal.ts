import type { Context } from "hono";
import type { AppEnv } from "../app-env.ts";
import type { Principal } from "../auth/principal.ts";
import type { EventTickets } from "../run-events/event-tickets.ts";

/** The one route a ticket opens: a run's event stream (docs/api.md "Runs"). */
const EVENT_STREAM_PATH = /^\/v1\/runs\/([^/]+)\/events$/;
export const EVENT_TICKET_QUERY = "ticket";

/**
 * The principal of a request authenticated by `?ticket=` instead of a bearer token, or
 * undefined. Only `GET /v1/runs/{run_id}/events` for the very run the ticket names
 * qualifies; on any other route, method or run the ticket is ignored (so the request is
 * unauthenticated). A ticket never carries the admin flag.
 */
export async function eventTicketPrincipal(
  c: Context<AppEnv>,
  tickets: EventTickets,
): Promise<Principal | undefined> {
  const ticket = c.req.query(EVENT_TICKET_QUERY);
  if (ticket === undefined) return undefined;
  const runId = EVENT_STREAM_PATH.exec(c.req.path)?.[1];
  if (c.req.method !== "GET" || runId === undefined) {
    c.var.logger.info({ reason: "ticket outside its event stream" }, "authentication refused");
    return undefined;
  }
  const checked = await tickets.check(ticket, c.req.raw.signal);
  if (!checked.ok) {
    c.var.logger.info({ reason: `ticket ${checked.reason}` }, "authentication refused");
    return undefined;
  }
  if (checked.runId !== runId) {
    c.var.logger.info({ reason: "ticket for another run" }, "authentication refused");
    return undefined;
  }
  return { uid: checked.uid, admin: false };
}
