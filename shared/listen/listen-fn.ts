/**
 * Starts a LISTEN on `channel`; the returned function ends it (postgresListen; tests
 * may pass their own).
 */
export type ListenFn = (
  channel: string,
  onPayload: (payload: string) => void,
) => Promise<() => Promise<void>>;
