import { useQuery } from "@tanstack/react-query";
import type { NodeRuntimeData } from "@workcell/sdk";
import { useConsole } from "../console-context.tsx";
import { ErrorMessage } from "../ui/error-message.tsx";
import { formatTime } from "../ui/format.ts";
import { AdminPage } from "./admin-page.tsx";

function Ready({ ready, label }: { ready: boolean; label?: string }) {
  return (
    <span className={`badge badge-${ready ? "succeeded" : "failed"}`}>
      {label ?? (ready ? "ready" : "not ready")}
    </span>
  );
}

/** Operators: per node, is each sandbox tier usable, and each Runtime Asset verified? */
export function AdminRuntimePage() {
  const { api, session } = useConsole();
  const runtime = useQuery({
    queryKey: ["admin-runtime"],
    queryFn: ({ signal }) => api.admin.runtime(signal),
    enabled: session.admin,
    refetchInterval: 10_000,
  });
  return (
    <AdminPage title="Runtime">
      <p className="muted">
        What each agent-host found at start and still sees at its heartbeat: the sandbox tiers it
        can run, and the Runtime Assets (bash, python3, node, …) mounted at /runtime.
      </p>
      {runtime.isPending && <p className="muted">Loading runtime reports…</p>}
      <ErrorMessage error={runtime.error} />
      {runtime.data?.length === 0 && <p className="empty">No agent-host has registered yet.</p>}
      {runtime.data?.map((node) => (
        <NodeRuntime key={node.node_id} node={node} />
      ))}
    </AdminPage>
  );
}

function NodeRuntime({ node }: { node: NodeRuntimeData }) {
  const assets = node.runtime_assets;
  const notReady = assets.assets.filter((a) => !a.ready).length;
  return (
    <article className="card runtime-node" data-testid="runtime-node" aria-label={node.node_id}>
      <header className="row">
        <h3>
          <code>{node.node_id}</code>
        </h3>
        <span className={`badge badge-${node.state === "active" ? "succeeded" : "failed"}`}>
          {node.state}
        </span>
        <span className="muted">heartbeat {formatTime(node.heartbeat_at)}</span>
      </header>
      <table className="file-table" aria-label={`Sandbox tiers of ${node.node_id}`}>
        <thead>
          <tr>
            <th scope="col">Tier</th>
            <th scope="col">Ready</th>
            <th scope="col">Detail</th>
          </tr>
        </thead>
        <tbody>
          {node.sandbox_tiers.length === 0 && (
            <tr>
              <td colSpan={3} className="muted">
                No sandbox tier reported.
              </td>
            </tr>
          )}
          {node.sandbox_tiers.map((t) => (
            <tr key={t.tier}>
              <td>{t.tier}</td>
              <td>
                <Ready ready={t.ready} />
              </td>
              <td className="detail">{t.detail}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <p className="row" data-testid="checkpoint-mode">
        Checkpoints{" "}
        <span
          className={`badge badge-${node.checkpoints.mode === "reflink" ? "succeeded" : "pending"}`}
        >
          {node.checkpoints.mode}
        </span>{" "}
        <span className="muted">{node.checkpoints.detail}</span>
      </p>
      <h4 className="row">
        Runtime Assets <code>{assets.version}</code>
        {assets.state === "verified" ? (
          <Ready
            ready={notReady === 0}
            label={
              notReady === 0 ? "all verified" : `${notReady} of ${assets.assets.length} not ready`
            }
          />
        ) : (
          <span className="badge badge-pending">{assets.state}</span>
        )}
      </h4>
      {assets.error !== undefined && <p className="error">{assets.error}</p>}
      {assets.assets.length > 0 && (
        <table className="file-table" aria-label={`Runtime Assets of ${node.node_id}`}>
          <thead>
            <tr>
              <th scope="col">Asset</th>
              <th scope="col" className="hide-narrow">
                Version
              </th>
              <th scope="col">Ready</th>
              <th scope="col">Reason</th>
            </tr>
          </thead>
          <tbody>
            {assets.assets.map((a) => (
              <tr key={a.name}>
                <td>{a.name}</td>
                <td className="hide-narrow">
                  <code>{a.version}</code>
                </td>
                <td>
                  <Ready ready={a.ready} />
                </td>
                <td className="detail">{a.reason ?? ""}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </article>
  );
}
