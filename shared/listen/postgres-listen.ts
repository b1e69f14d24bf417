import type { Sql } from "postgres";
import type { ListenFn } from "./listen-fn.ts";

/**
 * LISTEN through postgres.js (it keeps one dedicated connection and re-listens after a
 * reconnect). Only a type comes from postgres.js here: the caller brings the client.
 */
export function postgresListen(sql: Sql): ListenFn {
  return async (channel, onPayload, onListen) => {
    const { unlisten } = await sql.listen(channel, onPayload, onListen);
    return unlisten;
  };
}
