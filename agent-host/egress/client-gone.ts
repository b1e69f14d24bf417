import { Socket } from "node:net";
import type { Duplex } from "node:stream";

/** A connection held while its decision may wait for a person. */
export type Held = {
  /** `parent`, also aborted when the client closes. */
  readonly signal: AbortSignal;
  /** The decision is made: the connection's idle timeout applies again. */
  release(): void;
};

/**
 * Holds `client` for its decision (decision 0137): a network approval may wait minutes, so
 * the proxy's idle timeout is off meanwhile, and the wait is bounded instead by the
 * connection that asked (a client that gives up, curl's --max-time or a killed command,
 * ends it and its approval), the listener (`parent`: the run ended) and the approval's own
 * timeout.
 */
export function holdForDecision(client: Duplex, parent: AbortSignal, idleTimeoutMs: number): Held {
  const gone = new AbortController();
  if (client.destroyed) gone.abort();
  else client.once("close", () => gone.abort());
  const socket = client instanceof Socket ? client : undefined;
  socket?.setTimeout(0);
  return {
    signal: AbortSignal.any([parent, gone.signal]),
    release: () => {
      if (socket !== undefined && !socket.destroyed) socket.setTimeout(idleTimeoutMs);
    },
  };
}
