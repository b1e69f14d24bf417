import { createRoute, type OpenAPIHono } from "@hono/zod-openapi";
import { eventTicketSchema } from "../../shared/contracts/run-event.ts";
import type { Db } from "../../shared/db/client.ts";
import { WorkcellError } from "../../shared/errors/workcell-error.ts";
import type { AppEnv } from "../app-env.ts";
import type { AppLimits } from "../app-limits.ts";
import { EVENT_TICKET_QUERY } from "../middleware/event-ticket-principal.ts";
import type { EventTickets } from "../run-events/event-tickets.ts";
import { findRun } from "../runs/run-store.ts";
import { bearerSecurity, commonErrors, errorResponse, runIdParams } from "./openapi-common.ts";

const route = createRoute({
  method: "post",
  path: "/v1/runs/{run_id}/events/ticket",
  operationId: "createRunEventsTicket",
  tags: ["Runs"],
  summary: "A ticket URL for reading the run's events with EventSource",
  description:
    "EventSource cannot send an Authorization header. The returned `url` carries a signed ticket that opens `GET /v1/runs/{run_id}/events` for this run and this user only (every other route and run refuses it with 401), for at most an hour. Treat it like a short-lived password: it ends up in URLs.",
  security: bearerSecurity,
  request: { params: runIdParams },
  responses: {
    201: {
      description: "The ticket URL",
      content: { "application/json": { schema: eventTicketSchema } },
    },
    404: errorResponse("No such run for this user."),
    ...commonErrors,
  },
});

export type RunEventTicketRouteDeps = {
  db: Db;
  tickets: EventTickets;
  limits: Pick<AppLimits, "eventTicketTtlSeconds">;
};

export function registerRunEventTicketRoute(
  app: OpenAPIHono<AppEnv>,
  deps: RunEventTicketRouteDeps,
): void {
  app.openapi(route, async (c) => {
    const { uid } = c.var.principal;
    const runId = c.req.valid("param").run_id;
    if ((await findRun(deps.db, uid, runId)) === undefined) {
      throw new WorkcellError("not_found", "No such run.");
    }
    const ticket = await deps.tickets.issue(
      { uid, runId },
      deps.limits.eventTicketTtlSeconds,
      c.req.raw.signal,
    );
    // Absolute, on the origin the caller reached us at: the page opening it may be on
    // another origin (CORS), where a relative URL would resolve against the page.
    const url = new URL(`/v1/runs/${runId}/events`, c.req.url);
    url.searchParams.set(EVENT_TICKET_QUERY, ticket.token);
    return c.json({ url: url.toString(), expires_at: ticket.expiresAt.toISOString() }, 201);
  });
}
