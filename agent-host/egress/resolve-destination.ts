import { lookup } from "node:dns/promises";
import { isIP } from "node:net";

export type Resolved = { readonly ok: true; readonly addresses: readonly string[] };
export type Unresolved = { readonly ok: false; readonly reason: "unresolved" | "resolve_timeout" };

/**
 * Every address the node's resolver (getaddrinfo: /etc/hosts, then DNS) gives for `host`,
 * once: the caller checks them and connects to one of exactly these, so a second answer
 * (DNS rebinding) is never asked for. getaddrinfo cannot be cancelled, so the deadline and
 * the signal stop the wait, not the lookup.
 */
export async function resolveDestination(
  host: string,
  timeoutMs: number,
  signal: AbortSignal,
): Promise<Resolved | Unresolved> {
  if (isIP(host) !== 0) return { ok: true, addresses: [host] };
  let timer: NodeJS.Timeout | undefined;
  const stop = new Promise<Unresolved>((resolve) => {
    timer = setTimeout(() => resolve({ ok: false, reason: "resolve_timeout" }), timeoutMs);
    signal.addEventListener("abort", () => resolve({ ok: false, reason: "resolve_timeout" }), {
      once: true,
    });
  });
  const answer = lookup(host, { all: true, verbatim: true }).then(
    (found): Resolved | Unresolved =>
      found.length === 0
        ? { ok: false, reason: "unresolved" }
        : { ok: true, addresses: found.map((entry) => entry.address) },
    (): Unresolved => ({ ok: false, reason: "unresolved" }),
  );
  try {
    return await Promise.race([answer, stop]);
  } finally {
    clearTimeout(timer);
  }
}
