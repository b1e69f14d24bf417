export { createDataPlaneApp } from "./data-plane-app.ts";
export type { DataPlaneDeps } from "./data-plane-deps.ts";
export type { DataPlaneEnv } from "./data-plane-env.ts";
export * from "./data-plane-limits.ts";
export {
  internalWorkdirBodySchema,
  WORKDIR_CHECK_PATH,
  WORKDIR_MATERIALIZE_PATH,
} from "./routes/internal-routes.ts";
export {
  type DataPlaneServer,
  type DataPlaneServerOptions,
  DEFAULT_DATA_PLANE_HOSTNAME,
  DEFAULT_DATA_PLANE_REQUEST_TIMEOUT_MS,
  startDataPlaneServer,
} from "./start-data-plane-server.ts";
export {
  createThreadRevocations,
  DEFAULT_ACTIVE_THREAD_TTL_MS,
  type ThreadRevocations,
} from "./thread-revocations.ts";
