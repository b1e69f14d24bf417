import type { Sql } from "postgres";
import type { ListenFn } from "../run-events/notify-run-event-waiter.ts";

/** LISTEN through postgres.js (it keeps one dedicated connection and re-listens after a reconnect). */
export function postgresListen(sql: Sql): ListenFn {
  return async (channel, onPayload) => {
    const { unlisten } = await sql.listen(channel, onPayload);
    return unlisten;
  };
}
