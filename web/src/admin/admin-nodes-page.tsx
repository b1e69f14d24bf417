import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useConsole } from "../console-context.tsx";
import { ConfirmDialog } from "../ui/confirm-dialog.tsx";
import { ErrorMessage } from "../ui/error-message.tsx";
import { formatTime } from "../ui/format.ts";
import { AdminPage } from "./admin-page.tsx";

function tiers(value: unknown): string {
  if (Array.isArray(value)) return value.map(String).join(", ");
  if (value !== null && typeof value === "object") return Object.keys(value).join(", ");
  return String(value ?? "");
}

/** Operators: each agent-host node, its heartbeat and load; quiesce (drain) and resume. */
export function AdminNodesPage() {
  const { api, session } = useConsole();
  const queryClient = useQueryClient();
  const nodes = useQuery({
    queryKey: ["admin-nodes"],
    queryFn: ({ signal }) => api.admin.nodes(signal),
    enabled: session.admin,
    refetchInterval: 10_000,
  });
  const change = useMutation({
    mutationFn: ({ nodeId, to }: { nodeId: string; to: "quiesce" | "resume" }) =>
      to === "quiesce" ? api.admin.quiesce(nodeId) : api.admin.resume(nodeId),
    onSuccess: () => void queryClient.invalidateQueries({ queryKey: ["admin-nodes"] }),
  });
  return (
    <AdminPage title="Nodes">
      {nodes.isPending && <p className="muted">Loading nodes…</p>}
      <ErrorMessage error={nodes.error} />
      <ErrorMessage error={change.error} />
      {nodes.data?.length === 0 && <p className="empty">No agent-host has registered yet.</p>}
      <table className="file-table" data-testid="node-table">
        <thead>
          <tr>
            <th scope="col">Node</th>
            <th scope="col">State</th>
            <th scope="col" className="hide-narrow">
              Heartbeat
            </th>
            <th scope="col">Sandboxes</th>
            <th scope="col">Runs</th>
            <th scope="col" className="hide-narrow">
              Tiers
            </th>
            <th scope="col">
              <span className="visually-hidden">Actions</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {nodes.data?.map((n) => (
            <tr key={n.node_id}>
              <td>
                <code>{n.node_id}</code>
              </td>
              <td>
                <span className={`badge badge-${n.state === "active" ? "succeeded" : "failed"}`}>
                  {n.state}
                </span>
              </td>
              <td className="hide-narrow">{formatTime(n.heartbeat_at)}</td>
              <td>{n.live_sandboxes}</td>
              <td>{n.running_runs}</td>
              <td className="hide-narrow">{tiers(n.sandbox_tiers)}</td>
              <td>
                {n.state === "active" ? (
                  <ConfirmDialog
                    trigger={
                      <button type="button" className="subtle">
                        Quiesce
                      </button>
                    }
                    title={`Quiesce ${n.node_id}?`}
                    description="The node takes no new sandboxes and drains the ones it has."
                    confirmLabel="Quiesce"
                    onConfirm={() => change.mutate({ nodeId: n.node_id, to: "quiesce" })}
                  />
                ) : n.state === "quiesced" ? (
                  <button
                    type="button"
                    className="subtle"
                    onClick={() => change.mutate({ nodeId: n.node_id, to: "resume" })}
                  >
                    Resume
                  </button>
                ) : null}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </AdminPage>
  );
}
