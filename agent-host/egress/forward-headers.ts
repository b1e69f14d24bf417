import type { IncomingMessage } from "node:http";

// Hop-by-hop and proxy headers never forwarded (RFC 9110 §7.6.1), and the client's Host:
// the upstream's Host is always the checked URL's, so a smuggled Host cannot name another site.
const DROPPED = new Set([
  "connection",
  "keep-alive",
  "proxy-connection",
  "proxy-authorization",
  "proxy-authenticate",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade",
  "host",
]);

/** Whether a request header (lower-case name) goes upstream as the client sent it. */
export function isForwardedHeader(name: string): boolean {
  return !DROPPED.has(name);
}

/** The request's headers as sent upstream: without hop-by-hop ones, with the checked Host. */
export function forwardHeaders(
  req: IncomingMessage,
  host: string,
): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(req.headers)) {
    if (value !== undefined && isForwardedHeader(name)) out[name] = value;
  }
  out.host = host;
  return out;
}
