import {
  createServer,
  request as httpRequest,
  type IncomingMessage,
  type ServerResponse,
} from "node:http";
import type { Socket } from "node:net";
import type { Duplex } from "node:stream";
import { TLSSocket, connect as tlsConnect } from "node:tls";
import { answerJson } from "../egress/answer-json.ts";
import { type EgressFlow, startFlow } from "../egress/egress-flow.ts";
import { forwardHeaders } from "../egress/forward-headers.ts";
import type { HttpProxyDeps } from "../egress/http-proxy-deps.ts";
import { refusalBody } from "../egress/refusal-body.ts";
import { guardRequest } from "./guard-request.ts";
import { pipeBody } from "./guarded-body.ts";
import type { Interception } from "./interception.ts";
import type { LeafIssuer } from "./leaf-certificates.ts";

type Target = { readonly host: string; readonly port: number; readonly address: string };

/** The upstream connection, verified, made while the sandbox's handshake runs. */
type Upstream = {
  /** The connection, the first time; undefined after. */
  take(): Promise<TLSSocket> | undefined;
  drop(): void;
};

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

function untrustedOrFailed(error: unknown): string {
  const code = (error as NodeJS.ErrnoException).code ?? "";
  return UNTRUSTED.has(code) ? "upstream_untrusted" : "upstream_failed";
}

/** Dials and verifies the upstream now; the first request takes it, else it is closed. */
function dialEarly(interception: Interception, to: Target, deps: HttpProxyDeps): Upstream {
  let taken = false;
  const socket = tlsConnect({
    host: to.address,
    port: to.port,
    servername: to.host,
    secureContext: interception.upstreamContext,
    rejectUnauthorized: true,
    ALPNProtocols: ["http/1.1"],
  });
  // A request is small writes (head, then end): no Nagle delay between them.
  socket.setNoDelay(true);
  const stop = () => socket.destroy();
  deps.signal.addEventListener("abort", stop, { once: true });
  socket.once("close", () => deps.signal.removeEventListener("abort", stop));
  const ready = new Promise<TLSSocket>((resolve, reject) => {
    socket.once("secureConnect", () => resolve(socket));
    socket.once("error", reject);
  });
  ready.catch(() => socket.destroy());
  socket.setTimeout(deps.limits.connectTimeoutMs, () =>
    socket.destroy(new Error("connect timeout")),
  );
  ready.then(
    () => socket.setTimeout(0),
    () => {},
  );
  return {
    take() {
      if (taken) return undefined;
      taken = true;
      return ready;
    },
    drop() {
      if (!taken) socket.destroy();
    },
  };
}

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
  answerJson(res, status, refusalBody(to.host, to.port, reason));
}

async function reoriginate(
  deps: HttpProxyDeps,
  interception: Interception,
  req: IncomingMessage,
  res: ServerResponse,
  to: Target,
  flow: EgressFlow,
  early: Upstream,
) {
  const authority = to.port === 443 ? to.host : `${to.host}:${to.port}`;
  const path = req.url ?? "/";
  const guarded = await guardRequest(
    deps.secrets,
    { host: to.host, port: to.port, url: path, headers: forwardHeaders(req, authority) },
    deps.signal,
  );
  if (!guarded.ok) return refuseInside(deps, res, to, guarded.status, guarded.reason);
  // The first request rides the connection opened at CONNECT time; later ones dial anew,
  // verified the same way (dialEarly), before any byte of the request is written.
  let socket: TLSSocket | undefined;
  try {
    socket = await (early.take() ?? dialEarly(interception, to, deps).take());
    if (socket === undefined) throw new Error("no upstream connection");
  } catch (error) {
    const reason = untrustedOrFailed(error);
    flow.cut(reason);
    return answerJson(res, 502, refusalBody(to.host, to.port, reason));
  }
  // The Host is the CONNECT's checked name, whatever the client wrote inside the tunnel.
  const upstream = httpRequest({
    createConnection: () => socket as TLSSocket,
    method: req.method,
    path: path.startsWith("/") ? path : new URL(path).pathname,
    headers: guarded.headers,
    // No agent: then Node uses createConnection (the verified socket), and only it.
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
    const reason = untrustedOrFailed(error);
    flow.cut(reason);
    if (!res.headersSent) answerJson(res, 502, refusalBody(to.host, to.port, reason));
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
  const targets = new WeakMap<object, { to: Target; flow: EgressFlow; early: Upstream }>();
  const server = createServer({
    highWaterMark: 64 * 1024,
    headersTimeout: deps.limits.headersTimeoutMs,
    requestTimeout: 0,
    keepAliveTimeout: deps.limits.headersTimeoutMs,
  });
  server.on("request", (req, res) => {
    const found = targets.get(req.socket);
    if (found === undefined) return void res.destroy();
    reoriginate(deps, interception, req, res, found.to, found.flow, found.early).catch(() =>
      res.destroy(),
    );
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
      const early = dialEarly(interception, to, deps);
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
      tls.once("close", () => {
        early.drop();
        flow.finish();
      });
      targets.set(tls, { to, flow, early });
      server.emit("connection", tls);
    },
  };
}
