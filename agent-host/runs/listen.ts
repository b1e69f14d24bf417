// One definition for both planes lives in shared/listen/; re-exported here for the
// worker's existing importers.
export type { ListenFn } from "../../shared/listen/listen-fn.ts";
export { postgresListen } from "../../shared/listen/postgres-listen.ts";
