import { type IncomingMessage, request, type Server, type ServerResponse } from "node:http";
import type { Duplex } from "node:stream";
import { guardRequest } from "../secrets/guard-request.ts";
import { pipeBody } from "../secrets/guarded-body.ts";
import { createInterceptor, type Interceptor } from "../secrets/tls-intercept.ts";
import { answerJson, endWithJson } from "./answer-json.ts";
import { holdForDecision } from "./client-gone.ts";
import { decideEgress } from "./egress-decision.ts";
import { startFlow } from "./egress-flow.ts";
import { forwardHeaders } from "./forward-headers.ts";
import type { HttpProxyDeps } from "./http-proxy-deps.ts";
import { refusalBody } from "./refusal-body.ts";
import { dial, relay } from "./relay.ts";

/** `host:port` of a CONNECT target, IPv6 in brackets; undefined when malformed. */
export function parseAuthority(authority: string): { host: string; port: number } | undefined {
  const match = /^(\[[^\]]*\]|[^:[\]]+):(\d{1,5})$/.exec(authority);
  if (match === null) return undefined;
  return { host: match[1] ?? "", port: Number(match[2]) };
}

async function forward(deps: HttpProxyDeps, req: IncomingMessage, res: ServerResponse) {
  const flow = startFlow(deps, "http");
  let url: URL;
  try {
    url = new URL(req.url ?? "");
  } catch {
    flow.deny("not_a_proxy_request");
    return answerJson(res, 400, refusalBody("?", 0, "not_a_proxy_request"));
  }
  const port = url.port === "" ? 80 : Number(url.port);
  flow.target(url.hostname, port, null);
  if (url.protocol !== "http:") {
    flow.deny("scheme_not_supported");
    return answerJson(res, 400, refusalBody(url.hostname, port, "scheme_not_supported"));
  }
  // A decision that asks a person waits as long as the client does (and no longer).
  const held = holdForDecision(req.socket, deps.signal, deps.limits.idleTimeoutMs);
  const decided = await decideEgress(deps.decision, deps.sandbox, url.hostname, port, held.signal);
  held.release();
  flow.target(decided.host, port, decided.address);
  if (!decided.allowed) {
    flow.deny(decided.reason);
    return answerJson(res, 403, refusalBody(decided.host, port, decided.reason, decided.note));
  }
  const guarded = await guardRequest(
    deps.secrets,
    { host: decided.host, port, url: req.url ?? "", headers: forwardHeaders(req, url.host) },
    deps.signal,
  );
  if (!guarded.ok) {
    flow.deny(guarded.reason);
    return answerJson(res, guarded.status, refusalBody(decided.host, port, guarded.reason));
  }
  const upstream = request({
    host: decided.address,
    port,
    method: req.method,
    path: `${url.pathname}${url.search}`,
    headers: guarded.headers,
    agent: false,
    signal: deps.signal,
    timeout: deps.limits.idleTimeoutMs,
  });
  const cut = (reason: string) => {
    flow.cut(reason);
    upstream.destroy();
    res.destroy();
  };
  upstream.on("timeout", () => cut("idle_timeout"));
  upstream.on("error", () => {
    if (!res.headersSent) answerJson(res, 502, refusalBody(decided.host, port, "upstream_failed"));
    else res.destroy();
    flow.finish();
  });
  upstream.on("response", (reply) => {
    reply.on("data", (chunk: Buffer) => {
      if (!flow.count("down", chunk.length)) cut("egress_bytes_per_run");
    });
    reply.on("end", () => flow.finish());
    reply.on("error", () => cut("upstream_failed"));
    res.writeHead(reply.statusCode ?? 502, reply.statusMessage, reply.headers);
    reply.pipe(res);
  });
  res.on("close", () => {
    upstream.destroy();
    flow.finish();
  });
  pipeBody(req, upstream, guarded.body, {
    count: (bytes) => flow.count("up", bytes),
    onBudget: () => cut("egress_bytes_per_run"),
    onPlaceholder: () => {
      upstream.destroy();
      flow.deny("secret_exfiltration");
      if (!res.headersSent)
        answerJson(res, 403, refusalBody(decided.host, port, "secret_exfiltration"));
      else res.destroy();
    },
  });
}

async function tunnel(
  deps: HttpProxyDeps,
  interceptor: Interceptor | undefined,
  req: IncomingMessage,
  client: Duplex,
  head: Buffer,
) {
  const flow = startFlow(deps, "connect");
  const refuse = (status: number, host: string, port: number, reason: string, note?: string) => {
    flow.deny(reason);
    endWithJson(client, status, refusalBody(host, port, reason, note));
  };
  const target = parseAuthority(req.url ?? "");
  if (target === undefined) return refuse(400, req.url ?? "?", 0, "bad_host");
  flow.target(target.host, target.port, null);
  // Whether a secret binds it is read alongside the policy (one round trip, not two).
  const binding =
    interceptor !== undefined && deps.secrets !== undefined
      ? deps.secrets.binds(target.host, target.port, deps.signal).catch(() => undefined)
      : Promise.resolve(false);
  const held = holdForDecision(client, deps.signal, deps.limits.idleTimeoutMs);
  const decided = await decideEgress(
    deps.decision,
    deps.sandbox,
    target.host,
    target.port,
    held.signal,
  );
  held.release();
  flow.target(decided.host, target.port, decided.address);
  if (!decided.allowed) return refuse(403, decided.host, target.port, decided.reason, decided.note);
  // A host a secret binds is the only HTTPS the proxy opens (decision 0133).
  const bound = await binding;
  if (bound === undefined) return refuse(503, decided.host, target.port, "secrets_unavailable");
  if (bound && interceptor !== undefined) {
    const to = { host: decided.host, port: target.port, address: decided.address };
    return interceptor.take(client, head, to, flow);
  }
  let upstream: Awaited<ReturnType<typeof dial>>;
  try {
    upstream = await dial(decided.address, target.port, deps.limits.connectTimeoutMs, deps.signal);
  } catch {
    flow.cut("upstream_failed");
    return refuse(502, decided.host, target.port, "upstream_failed");
  }
  if (client.destroyed) {
    upstream.socket.destroy();
    return flow.finish();
  }
  client.write("HTTP/1.1 200 Connection Established\r\n\r\n");
  if (head.length > 0) {
    if (!flow.count("up", head.length)) {
      flow.cut("egress_bytes_per_run");
      client.destroy();
      upstream.socket.destroy();
      return flow.finish();
    }
    upstream.socket.write(head);
  }
  relay(client, upstream, flow, deps.limits.idleTimeoutMs);
}

/** Plain-HTTP forwarding and CONNECT on `server` (one server per sandbox listener). */
export function handleHttpProxy(server: Server, deps: HttpProxyDeps): Interceptor | undefined {
  const interceptor =
    deps.interception !== undefined &&
    deps.secrets !== undefined &&
    deps.secrets.placeholders.size > 0
      ? createInterceptor(deps, deps.interception)
      : undefined;
  // A handler that throws (it should not) ends its connection, never the process.
  server.on("request", (req, res) => {
    forward(deps, req, res).catch(() => res.destroy());
  });
  server.on("connect", (req, client: Duplex, head: Buffer) => {
    tunnel(deps, interceptor, req, client, head).catch(() => client.destroy());
  });
  // Upgrades (WebSocket over a plain proxy request) are not forwarded: clients use CONNECT.
  server.on("upgrade", (_req, socket: Duplex) => socket.destroy());
  server.on("clientError", (_error, socket: Duplex) => socket.destroy());
  return interceptor;
}
