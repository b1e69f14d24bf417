import type { Duplex } from "node:stream";
import { createServer as createSocksServer } from "@pondwader/socks5-server";
import { holdForDecision } from "./client-gone.ts";
import { decideEgress } from "./egress-decision.ts";
import { startFlow } from "./egress-flow.ts";
import type { HttpProxyDeps } from "./http-proxy-deps.ts";
import { dial, relay } from "./relay.ts";

type Decided = { address: string; host: string; flow: ReturnType<typeof startFlow> };

/**
 * SOCKS5 CONNECT (for git://, ssh and other TCP) through @pondwader/socks5-server, which
 * speaks the protocol; the decision is ours: the library's validator asks it, and our
 * connection handler dials only the address the decision checked. BIND and UDP ASSOCIATE
 * are not supported (the library answers COMMAND_NOT_SUPPORTED).
 */
export function createSocksHandler(deps: HttpProxyDeps): (socket: Duplex) => void {
  const server = createSocksServer();
  server.setRulesetValidator(async (conn) => {
    const flow = startFlow(deps, "socks5");
    flow.target(conn.destAddress, conn.destPort, null);
    const held = holdForDecision(conn.socket, deps.signal, deps.limits.idleTimeoutMs);
    try {
      const decided = await decideEgress(
        deps.decision,
        deps.sandbox,
        conn.destAddress,
        conn.destPort,
        held.signal,
      );
      held.release();
      flow.target(decided.host, conn.destPort, decided.address);
      if (!decided.allowed) {
        flow.deny(decided.reason);
        return false;
      }
      conn.metadata = { address: decided.address, host: decided.host, flow } satisfies Decided;
      return true;
    } catch {
      // Closed on anything unexpected: refused, never let through.
      flow.deny("internal");
      return false;
    }
  });
  server.setConnectionHandler((conn, sendStatus) => {
    const { address, flow } = conn.metadata as Decided;
    dial(address, conn.destPort, deps.limits.connectTimeoutMs, deps.signal).then(
      (upstream) => {
        if (conn.socket.destroyed) {
          upstream.socket.destroy();
          return flow.finish();
        }
        sendStatus("REQUEST_GRANTED");
        relay(conn.socket, upstream, flow, deps.limits.idleTimeoutMs);
      },
      () => {
        flow.cut("upstream_failed");
        flow.finish();
        if (!conn.socket.destroyed) sendStatus("HOST_UNREACHABLE");
      },
    );
  });
  return (socket) => server._handleConnection(socket);
}
