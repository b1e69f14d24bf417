/**
 * Starts a LISTEN on `channel`; the returned function ends it (postgresListen; tests
 * may pass their own). `onListen`, where given, is called each time the LISTEN is
 * established: first, and again after a reconnect, when payloads sent while the
 * connection was down are lost (a caller that waits on them looks again).
 */
export type ListenFn = (
  channel: string,
  onPayload: (payload: string) => void,
  onListen?: () => void,
) => Promise<() => Promise<void>>;
