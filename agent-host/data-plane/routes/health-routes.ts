import type { Hono } from "hono";
import type { ReadinessCheck } from "../../node/node-readiness.ts";
import type { DataPlaneEnv } from "../data-plane-env.ts";

/** A part that has not answered by then counts as down (a load balancer waits less). */
export const READINESS_TIMEOUT_MS = 2_000;

/**
 * `GET /healthz` (liveness: the process serves HTTP) and `GET /readyz` (can this node
 * take work: docs/api.md "Health"), without auth, for load balancers and operators. Until the
 * node has started its sandbox manager and worker, `readiness()` is undefined: 503.
 */
export function registerHealthRoutes(
  app: Hono<DataPlaneEnv>,
  readiness: () => ReadinessCheck | undefined,
): void {
  app.get("/healthz", (c) => c.json({ status: "ok" }));
  app.get("/readyz", async (c) => {
    const check = readiness();
    if (check === undefined) return c.json({ ready: false, reason: "starting" }, 503);
    const signal = AbortSignal.any([c.req.raw.signal, AbortSignal.timeout(READINESS_TIMEOUT_MS)]);
    const report = await check(signal);
    return c.json(report, report.ready ? 200 : 503);
  });
}
