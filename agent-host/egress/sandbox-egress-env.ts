import { RELAY_SOURCE } from "./relay-source.ts";

/** The relay's port on the sandbox's loopback (its own network namespace: no clash). */
export const EGRESS_RELAY_PORT = 3128;

/**
 * The environment of an exec whose run has network (and only then): the proxy variables in
 * both cases (curl, pip, git, Python and Go read the lower-case ones, others the upper),
 * SOCKS with remote resolution for everything else (`socks5h`: names go to the proxy, the
 * sandbox has no DNS), Node 24's own proxy support, npm's settings, and the relay's
 * source and socket for the shell prelude.
 */
export function egressEnv(
  socketInSandbox: string,
  port = EGRESS_RELAY_PORT,
): Record<string, string> {
  const http = `http://127.0.0.1:${port}`;
  const socks = `socks5h://127.0.0.1:${port}`;
  const noProxy = "localhost,127.0.0.1,::1";
  return {
    HTTP_PROXY: http,
    HTTPS_PROXY: http,
    ALL_PROXY: socks,
    NO_PROXY: noProxy,
    http_proxy: http,
    https_proxy: http,
    all_proxy: socks,
    no_proxy: noProxy,
    NODE_USE_ENV_PROXY: "1",
    npm_config_proxy: http,
    npm_config_https_proxy: http,
    PIP_PROXY: http,
    WORKCELL_EGRESS_PORT: String(port),
    WORKCELL_EGRESS_SOCKET: socketInSandbox,
    WORKCELL_EGRESS_RELAY: RELAY_SOURCE,
  };
}

/**
 * Shell text run before the command in the same shell: starts the relay (which returns
 * once it listens). Without python3 the command still runs, with no route out: closed.
 */
export const EGRESS_PRELUDE =
  'python3 -c "$WORKCELL_EGRESS_RELAY" 2>/dev/null || echo "workcell: the network relay could not start (python3 missing?); there is no network" >&2\n';
