/**
 * Starts a LISTEN on `channel`; the returned function ends it. postgres.js
 * (postgresListen) and PGlite (`pg.listen`) both fit; each entry picks one.
 */
export type ListenFn = (
  channel: string,
  onPayload: (payload: string) => void,
) => Promise<() => Promise<void>>;
