import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { Label } from "radix-ui";
import { type FormEvent, useState } from "react";
import type { NetworkPolicy, UserNetworkData } from "../../../sdk/src/index.ts";
import { useConsole } from "../console-context.tsx";
import { ErrorMessage } from "../ui/error-message.tsx";

/**
 * A user's network ceiling on the limits page (issue #34): which hosts their sandboxes may
 * reach. Empty hosts = no network; saving applies to the user's next connection.
 */
export function UserNetworkCard({ uid }: { uid: string }) {
  const { api } = useConsole();
  const queryClient = useQueryClient();
  const network = useQuery({
    queryKey: ["admin-network", uid],
    queryFn: ({ signal }) => api.admin.network(uid, signal),
  });
  const save = useMutation({
    mutationFn: (policy: NetworkPolicy) => api.admin.setNetwork(uid, policy),
    onSuccess: (data) => queryClient.setQueryData(["admin-network", uid], data),
  });
  if (network.isPending) return <p className="muted">Loading the network policy of {uid}…</p>;
  if (network.isError) return <ErrorMessage error={network.error} />;
  return (
    <NetworkForm
      key={JSON.stringify(network.data.policy)}
      data={network.data}
      saving={save.isPending}
      saved={save.isSuccess}
      error={save.error}
      onSave={(policy) => save.mutate(policy)}
    />
  );
}

function NetworkForm(p: {
  data: UserNetworkData;
  saving: boolean;
  saved: boolean;
  error: unknown;
  onSave(policy: NetworkPolicy): void;
}) {
  const [hosts, setHosts] = useState((p.data.policy.allow ?? []).join(", "));
  const onSubmit = (e: FormEvent) => {
    e.preventDefault();
    const allow = hosts
      .split(/[\s,]+/)
      .map((host) => host.trim())
      .filter((host) => host.length > 0);
    p.onSave(allow.length === 0 ? { mode: "none", allow: [] } : { mode: "allowlist", allow });
  };
  return (
    <form className="card" onSubmit={onSubmit} aria-label="Network policy">
      <h3>Network</h3>
      <p className="muted" data-testid="network-policy">
        {p.data.policy.mode === "none"
          ? "No network: sandboxes reach nothing."
          : `Sandboxes may reach: ${(p.data.policy.allow ?? []).join(", ")}.`}{" "}
        {p.data.source === "default" ? "(the deployment's default)" : "(set by an admin)"}
      </p>
      <Label.Root htmlFor="network-hosts">Allowed hosts</Label.Root>
      <input
        id="network-hosts"
        value={hosts}
        onChange={(e) => setHosts(e.target.value)}
        placeholder="pypi.org, *.github.com, example.com:8443 (empty: no network)"
      />
      <div className="row">
        <button type="submit" disabled={p.saving}>
          Save network
        </button>
      </div>
      {p.saved && <p role="status">Network saved.</p>}
      <ErrorMessage error={p.error} title="Save failed" />
    </form>
  );
}
