import type { Socket } from "node:net";
import { endWithJson } from "./answer-json.ts";
import { holdForDecision } from "./client-gone.ts";
import { decideEgress } from "./egress-decision.ts";
import { startFlow } from "./egress-flow.ts";
import { isForwardedHeader } from "./forward-headers.ts";
import type { HttpProxyDeps } from "./http-proxy-deps.ts";
import type { ProxyRequestHead } from "./proxy-request-head.ts";
import { refusalBody } from "./refusal-body.ts";
import { dial, relay } from "./relay.ts";

/**
 * The head sent upstream: origin-form target, the checked Host, and one request only. The
 * hop-by-hop headers dropped are forwardHeaders' (a head with Transfer-Encoding or Upgrade
 * never comes here: proxy-request-head.ts sends it to node:http's path).
 */
function upstreamHead(head: ProxyRequestHead): string {
  const lines = [`${head.method} ${head.url.pathname}${head.url.search} HTTP/1.1`];
  for (const [name, value] of head.headers)
    if (isForwardedHeader(name)) lines.push(`${name}: ${value}`);
  lines.push(`host: ${head.url.host}`, "connection: close", "", "");
  return lines.join("\r\n");
}

/**
 * A plainly framed plain-HTTP request (proxy-request-head.ts), forwarded as bytes: the
 * same decision as every connection, then the rewritten head, exactly its body, and the
 * upstream's answer streamed back as read (no re-parse, no re-serialisation), the
 * connection closed after it. One request per connection: a client's next request on it
 * is never sent anywhere. Anything else takes node:http's path (http-proxy-handlers.ts).
 */
export async function forwardRawHttp(
  deps: HttpProxyDeps,
  client: Socket,
  head: ProxyRequestHead,
  rest: Buffer,
): Promise<void> {
  const flow = startFlow(deps, "http");
  const port = head.url.port === "" ? 80 : Number(head.url.port);
  flow.target(head.url.hostname, port, null);
  const held = holdForDecision(client, deps.signal, deps.limits.idleTimeoutMs);
  const decided = await decideEgress(
    deps.decision,
    deps.sandbox,
    head.url.hostname,
    port,
    held.signal,
  );
  held.release();
  flow.target(decided.host, port, decided.address);
  if (!decided.allowed) {
    flow.deny(decided.reason);
    return endWithJson(client, 403, refusalBody(decided.host, port, decided.reason, decided.note));
  }
  let upstream: Awaited<ReturnType<typeof dial>>;
  try {
    upstream = await dial(decided.address, port, deps.limits.connectTimeoutMs, deps.signal);
  } catch {
    flow.cut("upstream_failed");
    flow.finish();
    return endWithJson(client, 502, refusalBody(decided.host, port, "upstream_failed"));
  }
  if (client.destroyed) {
    upstream.socket.destroy();
    return flow.finish();
  }
  upstream.socket.write(upstreamHead(head));
  const body = rest.subarray(0, head.bodyLength);
  if (body.length > 0) {
    if (!flow.count("up", body.length)) {
      flow.cut("egress_bytes_per_run");
      client.destroy();
      upstream.socket.destroy();
      return flow.finish();
    }
    upstream.socket.write(body);
  }
  relay(client, upstream, flow, deps.limits.idleTimeoutMs, head.bodyLength - body.length);
  client.resume();
}
