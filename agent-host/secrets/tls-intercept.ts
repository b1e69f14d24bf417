import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { request as httpsRequest } from "node:https";
import type { Socket } from "node:net";
import type { Duplex } from "node:stream";
import { TLSSocket } from "node:tls";
import { type EgressFlow, startFlow } from "../egress/egress-flow.ts";
import type { HttpProxyDeps } from "../egress/http-proxy-handlers.ts";
import { answer, forwardHeaders } from "../egress/http-proxy-handlers.ts";
import { refusalBody } from "../egress/refusal-body.ts";
import { guardRequest } from "./guard-request.ts";
import { pipeBody } from "./guarded-body.ts";
import type { LeafIssuer } from "./leaf-certificates.ts";

/** The node's TLS termination towards bound hosts (decision 0133). */
export type Interception = {
  readonly issuer: LeafIssuer;
  /** What upstream certificates are verified against: the system's trust (+ a test CA). */
  readonly upstreamCa: readonly string[];
};

type Target = { readonly host: string; readonly port: number; readonly address: string };

export type Interceptor = {
  /** Serves an allowed CONNECT to a bound host: terminate, swap, re-originate. */
  take(client: Duplex, head: Buffer, to: Target, flow: EgressFlow): Promise<void>;
};

// Certificate failures of the real upstream: the request fails, nothing is swapped or sent.
const UNTRUSTED = new Set([
  "DEPTH_ZERO_SELF_SIGNED_CERT",
  "SELF_SIGNED_CERT_IN_CHAIN",
  "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
  "UNABLE_TO_GET_ISSUER_CERT",
  "UNABLE_TO_GET_ISSUER_CERT_LOCALLY",
  "CERT_HAS_EXPIRED",
  "CERT_NOT_YET_VALID",
  "CERT_UNTRUSTED",
  "ERR_TLS_CERT_ALTNAME_INVALID",
]);

function refuseInside(
  deps: HttpProxyDeps,
  res: ServerResponse,
  to: Target,
  status: number,
  reason: string,
) {
  // A refused request inside a kept tunnel is audited on its own.
  const refused = startFlow(deps, "connect");
  refused.target(to.host, to.port, to.address);
  refused.deny(reason);
  answer(res, status, refusalBody(to.host, to.port, reason));
}

async function reoriginate(
  deps: HttpProxyDeps,
  interception: Interception,
  req: IncomingMessage,
  res: ServerResponse,
  to: Target,
  flow: EgressFlow,
) {
  const authority = to.port === 443 ? to.host : `${to.host}:${to.port}`;
  const path = req.url ?? "/";
  const guarded = await guardRequest(
    deps.secrets,
    { host: to.host, port: to.port, url: path, headers: forwardHeaders(req, authority) },
    deps.signal,
  );
  if (!guarded.ok) return refuseInside(deps, res, to, guarded.status, guarded.reason);
  // The Host is the CONNECT's checked name, whatever the client wrote inside the tunnel.
  const upstream = httpsRequest({
    host: to.address,
    port: to.port,
    servername: to.host,
    ca: [...interception.upstreamCa],
    rejectUnauthorized: true,
    method: req.method,
    path: path.startsWith("/") ? path : new URL(path).pathname,
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
  upstream.on("error", (error: NodeJS.ErrnoException) => {
    const reason = UNTRUSTED.has(error.code ?? "") ? "upstream_untrusted" : "upstream_failed";
    flow.cut(reason);
    if (!res.headersSent) answer(res, 502, refusalBody(to.host, to.port, reason));
    else res.destroy();
  });
  upstream.on("response", (reply) => {
    reply.on("data", (chunk: Buffer) => {
      if (!flow.count("down", chunk.length)) cut("egress_bytes_per_run");
    });
    reply.on("error", () => cut("upstream_failed"));
    res.writeHead(reply.statusCode ?? 502, reply.statusMessage, reply.headers);
    reply.pipe(res);
  });
  res.on("close", () => upstream.destroy());
  pipeBody(req, upstream, guarded.body, {
    count: (bytes) => flow.count("up", bytes),
    onBudget: () => cut("egress_bytes_per_run"),
    onPlaceholder: () => {
      upstream.destroy();
      if (!res.headersSent) refuseInside(deps, res, to, 403, "secret_exfiltration");
      else res.destroy();
    },
  });
}

/**
 * One sandbox listener's TLS termination: the client's TLS ends here with a leaf of the
 * deployment CA for the CONNECT's name (ALPN http/1.1 only), each request inside is
 * guarded and swapped (guard-request.ts) and sent over a new TLS connection to the checked
 * address, verifying the real certificate for that name; an untrusted upstream fails
 * before any request byte (so any value) is sent.
 */
export function createInterceptor(deps: HttpProxyDeps, interception: Interception): Interceptor {
  const targets = new WeakMap<object, { to: Target; flow: EgressFlow }>();
  const server = createServer({
    highWaterMark: 64 * 1024,
    headersTimeout: deps.limits.headersTimeoutMs,
    requestTimeout: 0,
    keepAliveTimeout: deps.limits.headersTimeoutMs,
  });
  server.on("request", (req, res) => {
    const found = targets.get(req.socket);
    if (found === undefined) return void res.destroy();
    reoriginate(deps, interception, req, res, found.to, found.flow).catch(() => res.destroy());
  });
  server.on("upgrade", (_req, socket: Duplex) => socket.destroy());
  server.on("clientError", (_error, socket: Duplex) => socket.destroy());
  return {
    async take(client, head, to, flow) {
      let context: Awaited<ReturnType<LeafIssuer["contextFor"]>>;
      try {
        context = await interception.issuer.contextFor(to.host);
      } catch {
        flow.cut("certificate_failed");
        client.end("HTTP/1.1 502 Bad Gateway\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
        return flow.finish();
      }
      if (client.destroyed) return flow.finish();
      client.write("HTTP/1.1 200 Connection Established\r\n\r\n");
      if (head.length > 0) client.unshift(head);
      const tls = new TLSSocket(client as Socket, {
        isServer: true,
        secureContext: context,
        ALPNProtocols: ["http/1.1"],
      });
      tls.on("error", () => {
        tls.destroy();
        client.destroy();
      });
      tls.once("close", () => flow.finish());
      targets.set(tls, { to, flow });
      server.emit("connection", tls);
    },
  };
}
