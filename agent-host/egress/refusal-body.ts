/**
 * What a refused client reads (a 403 body, in the API's error shape): the host, the
 * reason, and who can change it, so an agent can tell its user what to ask for.
 */
export function refusalBody(host: string, port: number, reason: string, note?: string): string {
  const why: Record<string, string> = {
    not_in_policy: `${host}:${port} is not in your network policy; an admin can allow it (PUT /v1/admin/users/{uid}/network), a run can only narrow it.`,
    ip_literal: "IP addresses are never allowed: policies name hosts; use the host's name.",
    private_address: `${host} resolves to a private, loopback, link-local or multicast address, which is always refused; only the operator can open private ranges for the deployment.`,
    node_address: `${host} resolves to an address of this node, which is always refused.`,
    egress_bytes_per_run: "This run has used its egress_bytes_per_run; an admin can raise it.",
    approval_denied: `${note ?? "Denied."} The run's owner decides network approvals (docs/api.md "Approvals").`,
    approval_expired: `${note ?? "Nobody decided in time."} The run's owner decides network approvals (docs/api.md "Approvals").`,
    approval_unavailable: note ?? "The approval could not be asked; nothing was sent.",
    approval_busy: `${note ?? "Another approval of this run is pending."} Try again once it is decided.`,
  };
  return JSON.stringify({
    error: {
      code: "forbidden",
      message: `Workcell egress proxy refused ${host}:${port} (${reason}). ${why[reason] ?? "Ask an admin (GET /v1/network shows your policy)."}`,
      details: { reason, host, port, changed_by: "admin" },
    },
  });
}
