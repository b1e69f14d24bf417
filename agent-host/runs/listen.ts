import type { Sql } from "postgres";

/**
 * Starts a LISTEN on `channel`; the returned function ends it. postgres.js (one dedicated
 * connection, re-listened after a reconnect) and PGlite (`pg.listen`) both fit; main.ts
 * picks one. The same shape as functions/run-events' ListenFn.
 */
export type ListenFn = (
  channel: string,
  onPayload: (payload: string) => void,
) => Promise<() => Promise<void>>;

/** LISTEN through postgres.js. */
export function postgresListen(sql: Sql): ListenFn {
  return async (channel, onPayload) => {
    const { unlisten } = await sql.listen(channel, onPayload);
    return unlisten;
  };
}
