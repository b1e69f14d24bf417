import { createRoute, type OpenAPIHono } from "@hono/zod-openapi";
import { abortable } from "../../shared/async/abortable.ts";
import { healthzBodySchema } from "../../shared/contracts/health.ts";
import type { WorkcellMetrics } from "../../shared/metrics/workcell-metrics.ts";
import type { AppEnv } from "../app-env.ts";
import type { HealthProbes } from "../health/health-probes.ts";

/** A dependency that has not answered by then counts as down (a load balancer waits less). */
export const HEALTH_PROBE_TIMEOUT_MS = 2_000;

const route = createRoute({
  method: "get",
  path: "/v1/healthz",
  summary: "Health of the API and each dependency",
  responses: {
    200: {
      description: "Every component is ok",
      content: { "application/json": { schema: healthzBodySchema } },
    },
    503: {
      description: "A dependency is down",
      content: { "application/json": { schema: healthzBodySchema } },
    },
  },
});

export function registerHealthRoute(
  app: OpenAPIHono<AppEnv>,
  probes: HealthProbes,
  metrics: WorkcellMetrics,
): void {
  app.openapi(route, async (c) => {
    const signal = AbortSignal.any([
      c.req.raw.signal,
      AbortSignal.timeout(HEALTH_PROBE_TIMEOUT_MS),
    ]);
    const state = async (probe: "db" | "queue" | "storage") => {
      try {
        // Bounded here too: a probe that ignores its signal cannot hold the answer.
        await abortable(probes[probe](signal), signal, probe);
        return "ok" as const;
      } catch (error) {
        c.var.logger.warn({ err: error, probe }, "health probe failed");
        return "down" as const;
      }
    };
    const nodesState = async () => {
      try {
        const ready = await abortable(probes.nodesReady(signal), signal, "nodes");
        return ready ? ("ok" as const) : ("none_ready" as const);
      } catch (error) {
        c.var.logger.warn({ err: error, probe: "nodes" }, "health probe failed");
        return "none_ready" as const;
      }
    };
    const [db, queue, storage, nodes] = await Promise.all([
      state("db"),
      state("queue"),
      state("storage"),
      nodesState(),
    ]);
    metrics.dbUp.set(db === "ok" ? 1 : 0);
    const ok = db === "ok" && queue === "ok" && storage === "ok";
    // No node ready is not the API's failure (it still accepts runs; they wait): 200.
    const status = !ok
      ? ("down" as const)
      : nodes === "ok"
        ? ("ok" as const)
        : ("degraded" as const);
    const body = { status, components: { db, queue, storage, nodes } };
    return ok ? c.json(body, 200) : c.json(body, 503);
  });
}
