import type { Context } from "hono";

const LOOPBACK_HOSTS = new Set(["127.0.0.1", "localhost", "[::1]"]);

function hostnameOf(hostHeader: string): string {
  // "[::1]:8080" keeps its brackets; "127.0.0.1:8080" loses the port.
  if (hostHeader.startsWith("[")) return hostHeader.slice(0, hostHeader.indexOf("]") + 1);
  return hostHeader.split(":")[0] ?? "";
}

/**
 * True when a request to a local-only endpoint comes from this machine's own pages.
 *
 * The local Workcell listens on 127.0.0.1 only, but a web page on any site can still make
 * the browser send requests there. Two checks close that: the `Host` must be a loopback
 * name (a DNS-rebinding page would send its own host name), and an `Origin`, which
 * browsers always send on cross-origin and on POST requests, must be a loopback origin
 * too (a foreign site's page cannot forge it). Requests without `Origin` come from
 * non-browser clients on this machine, which could run `npm run token` anyway.
 */
export function isLoopbackRequest(c: Context): boolean {
  const host = c.req.header("host");
  if (host === undefined || !LOOPBACK_HOSTS.has(hostnameOf(host))) return false;
  const origin = c.req.header("origin");
  if (origin === undefined) return true;
  try {
    const url = new URL(origin);
    return (
      (url.protocol === "http:" || url.protocol === "https:") && LOOPBACK_HOSTS.has(url.hostname)
    );
  } catch {
    return false;
  }
}

/** The request's Origin when it is a loopback origin (for CORS answers), else undefined. */
export function loopbackOrigin(c: Context): string | undefined {
  const origin = c.req.header("origin");
  return origin !== undefined && isLoopbackRequest(c) ? origin : undefined;
}
