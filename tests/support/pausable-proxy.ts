import { rm } from "node:fs/promises";
import { createConnection, createServer, type Socket } from "node:net";

/** A TCP or unix-socket proxy a test can stop answering (connections stay open, nothing is forwarded). */
export type PausableProxy = {
  /** The TCP port the proxy listens on (127.0.0.1, a free port); 0 when it listens on a path. */
  port: number;
  /** The unix socket path it listens on, when asked for one. */
  path: string | undefined;
  /** Stops forwarding in both directions: peers see a connection that hangs, not one that fails. */
  pause(): void;
  /** Destroys every connection and refuses new ones (a socket that went away), until resume(). */
  cut(): void;
  /** Forwards again (after pause() or cut()), held bytes first. */
  resume(): void;
  /**
   * The connections open now go silent for good (what they send and would receive is
   * dropped, nothing is closed: a half-open path after a failover or a lost NAT entry);
   * new connections are forwarded as usual.
   */
  strand(): void;
  /** True while paused or cut. */
  readonly stopped: boolean;
  close(): Promise<void>;
};

export type ProxyTarget = { host: string; port: number } | { path: string };

export type PausableProxyOptions = {
  /** Listen on this unix socket path instead of a TCP port (e.g. in front of docker.sock). */
  listenPath?: string;
  /**
   * Called with every chunk a client sends; true pauses the proxy before that chunk is
   * forwarded, so a test can hang one exact request (an exec start) and nothing before it.
   */
  pauseBefore?: (chunk: Buffer) => boolean;
  /**
   * Called with every chunk a client sends; true lets that request through and pauses the
   * proxy before the first byte of the engine's answer on that connection, so the request
   * takes effect (a container is created) and its caller never learns it.
   */
  pauseReplyTo?: (chunk: Buffer) => boolean;
  /**
   * Called with every chunk a client sends; a function returned rewrites the first chunk of
   * the engine's answer on that connection (an engine's state caught at another moment:
   * what a slower engine would have said). It must keep the chunk's length.
   */
  rewriteReplyTo?: (chunk: Buffer) => ((reply: Buffer) => Buffer) | undefined;
  /**
   * Called with every chunk a client sends; true resets that connection instead of
   * forwarding the chunk (the client reads ECONNRESET, the engine a closed socket), so a
   * test can fail one exact request in flight rather than race a cut against it.
   */
  resetOn?: (chunk: Buffer) => boolean;
};

/** What a connection's next answer is due for: a pause, a rewrite. */
type AwaitingReply = { on: boolean; rewrite: ((reply: Buffer) => Buffer) | undefined };

/**
 * Forwards connections to `target`. pause() holds every byte in both directions (the
 * sockets stop being read), which is what a stalled network path or a frozen peer looks
 * like to a client: no error, no answer.
 */
export async function startPausableProxy(
  target: ProxyTarget,
  options: PausableProxyOptions = {},
): Promise<PausableProxy> {
  const pairs = new Set<[Socket, Socket]>();
  // Bytes that arrived while paused, in order, with where they were going.
  let held: Array<[Socket, Buffer]> | undefined;
  let cut = false;
  const stranded = new WeakSet<Socket>();
  const forward =
    (pair: [Socket, Socket], fromClient: boolean, awaitingReply: AwaitingReply) =>
    (input: Buffer) => {
      const [client, upstream] = pair;
      const to = fromClient ? upstream : client;
      let chunk = input;
      if (fromClient && options.resetOn?.(chunk)) {
        client.resetAndDestroy();
        upstream.destroy();
        return;
      }
      if (!held && fromClient && options.pauseBefore?.(chunk)) held = [];
      if (!held && fromClient && options.pauseReplyTo?.(chunk)) awaitingReply.on = true;
      if (fromClient) awaitingReply.rewrite ??= options.rewriteReplyTo?.(chunk);
      if (!held && !fromClient && awaitingReply.on) {
        awaitingReply.on = false;
        held = [];
      }
      if (!fromClient && awaitingReply.rewrite) {
        chunk = awaitingReply.rewrite(chunk);
        awaitingReply.rewrite = undefined;
      }
      if (stranded.has(to)) return;
      if (held) held.push([to, chunk]);
      else to.write(chunk);
    };
  const destroyAll = () => {
    for (const [a, b] of pairs) {
      a.destroy();
      b.destroy();
    }
  };
  const server = createServer((client) => {
    if (cut) {
      client.destroy();
      return;
    }
    const upstream = createConnection(target);
    const pair: [Socket, Socket] = [client, upstream];
    pairs.add(pair);
    const awaitingReply: AwaitingReply = { on: false, rewrite: undefined };
    client.on("data", forward(pair, true, awaitingReply));
    upstream.on("data", forward(pair, false, awaitingReply));
    const end = () => {
      pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    client.on("error", end).on("close", end);
    upstream.on("error", end).on("close", end);
  });
  const { listenPath } = options;
  if (listenPath !== undefined) await rm(listenPath, { force: true });
  await new Promise<void>((resolve) => {
    if (listenPath === undefined) server.listen(0, "127.0.0.1", resolve);
    else server.listen(listenPath, resolve);
  });
  const address = server.address();
  if (address === null) throw new Error("proxy is not listening");
  return {
    port: typeof address === "string" ? 0 : address.port,
    path: listenPath,
    get stopped() {
      return held !== undefined || cut;
    },
    pause() {
      held ??= [];
    },
    strand() {
      for (const pair of pairs) for (const socket of pair) stranded.add(socket);
    },
    cut() {
      cut = true;
      held = undefined;
      destroyAll();
    },
    resume() {
      cut = false;
      const pending = held ?? [];
      held = undefined;
      for (const [to, chunk] of pending) if (!to.destroyed) to.write(chunk);
    },
    async close() {
      destroyAll();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      if (listenPath !== undefined) await rm(listenPath, { force: true });
    },
  };
}
