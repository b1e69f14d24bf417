import { Socket } from "node:net";

// Decision 0167. postgres.js settles a connection's statements only when its socket
// answers, errors or closes. A connection whose peer went silent (a frozen proxy, a lost
// NAT entry, a half-open TCP path after a failover) does none of these, so its statement
// stays unsettled and the pooled connection is taken until the kernel's keepalive gives up
// (minutes to hours). The caller is not stuck (every call of ours is bounded by its own
// deadline, shared/async/abortable.ts), but the pool is. This watchdog is the driver's
// `socket` option: a socket that has been waiting for an answer longer than `stallMs`
// (bytes written since the last byte read) is destroyed with a connection error, which
// settles its statements (the driver's own error path) and frees its pool slot, so the
// next statement opens a fresh connection. Node-only (node:net); the Workers entry does
// not use it.

/** postgres.js's view of the options it passes to a `socket` factory. */
type DriverSocketOptions = {
  host: readonly string[];
  port: readonly number[];
  path?: string | false;
};

export type StalledConnectionWatchdogOptions = {
  /**
   * How long a connection may wait for an answer before it is ended. Must exceed the
   * longest statement the server lets run (its statement_timeout, or a locally raised one)
   * plus the network's slack: an answer is then overdue, never merely slow.
   */
  stallMs: number;
  /** Called with each connection ended (a log line, a metric). */
  onStalled?: (error: Error) => void;
};

/** Slack over the longest statement the server allows before an answer counts as overdue. */
export const STALL_MARGIN_MS = 30_000;

/**
 * The stall bound of a client whose connections run statements of at most
 * `statementTimeoutMs` (the connection's statement_timeout) and, where a statement raises
 * it locally (a lock wait), of at most `longestRaisedMs`.
 */
export function stallBoundMs(statementTimeoutMs: number, longestRaisedMs = 0): number {
  return Math.max(statementTimeoutMs, longestRaisedMs) + STALL_MARGIN_MS;
}

/** The error a stalled connection is destroyed with: a connection error (retryable). */
export function stalledConnectionError(stallMs: number): Error {
  return Object.assign(
    new Error(
      `PostgreSQL did not answer on this connection for ${stallMs} ms, so it was ended: its statement may or may not have run; retry it if it is safe to`,
    ),
    { code: "ETIMEDOUT" },
  );
}

/**
 * A postgres.js `socket` option: each connection's socket, watched for stalls. It is
 * returned while it connects (writes wait in the socket until then), so the driver's own
 * listeners see every failure and its connect_timeout bounds the connect, as with the
 * driver's default socket.
 */
export function stalledConnectionWatchdog(
  watchdog: StalledConnectionWatchdogOptions,
): (options: DriverSocketOptions) => Socket {
  let next = 0;
  return (options) => {
    const at = next++ % Math.max(1, options.port.length);
    const socket = new Socket();
    const host = options.host[at] ?? "localhost";
    if (options.path) socket.connect(options.path);
    else socket.connect(options.port[at] ?? 5432, host);
    // After connect(), which puts net.Socket's own write back in place.
    watchStalls(socket, watchdog);
    // The driver names the TLS server by it, as on its own sockets.
    return Object.assign(socket, { host });
  };
}

/** Destroys `socket` once it has waited `stallMs` for an answer to bytes it wrote. */
function watchStalls(socket: Socket, watchdog: StalledConnectionWatchdogOptions): void {
  let timer: NodeJS.Timeout | undefined;
  const stop = () => {
    if (timer !== undefined) clearTimeout(timer);
    timer = undefined;
  };
  const write = socket.write.bind(socket) as (...args: unknown[]) => boolean;
  socket.write = ((...args: unknown[]) => {
    // The first write after the last read starts the wait; later ones are the same wait.
    timer ??= setTimeout(() => {
      timer = undefined;
      const error = stalledConnectionError(watchdog.stallMs);
      watchdog.onStalled?.(error);
      socket.destroy(error);
    }, watchdog.stallMs);
    return write(...args);
  }) as Socket["write"];
  // Any byte read is an answer: the peer is there (a long result streams rows).
  socket.prependListener("data", stop);
  socket.once("close", stop);
}

/**
 * The watchdog as postgres.js client options, to spread into them (the driver's types do
 * not declare its `socket` option).
 */
export function stalledConnectionOptions(watchdog: StalledConnectionWatchdogOptions): object {
  return { socket: stalledConnectionWatchdog(watchdog) };
}
