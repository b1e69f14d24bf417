import { useQuery } from "@tanstack/react-query";
import type { UsageData } from "@workcell/sdk";
import { useConsole } from "../console-context.tsx";
import { ErrorMessage } from "../ui/error-message.tsx";
import { type UsageRow, type UsageState, usageRows, usedShare } from "./usage-rows.ts";

/**
 * Runs start and finish while the page is open; a slow refresh keeps it current without
 * costing the data plane more than one walk per user per refresh (decision 0049).
 */
const REFRESH_MS = 15_000;

const STATE_BADGE: Record<UsageState, { text: string; className: string } | undefined> = {
  ok: undefined,
  nearly: { text: "nearly full", className: "badge badge-cancelled" },
  full: { text: "at the limit", className: "badge badge-cancelled" },
  over: { text: "over the limit", className: "badge badge-failed" },
};

/** `/usage`: the signed-in user's workspace and runs against the limits in force for them. */
export function UsagePage() {
  const { api } = useConsole();
  const usage = useQuery({
    queryKey: ["usage"],
    queryFn: ({ signal }) => api.usage(signal),
    refetchInterval: REFRESH_MS,
  });
  return (
    <section className="page usage-page">
      <h2>Usage</h2>
      <p className="muted">
        Your workspace holds the files of all your threads; it and your runs count against the
        limits an administrator set for you (or the deployment's defaults). Sizes are measured a few
        seconds ago at most.
      </p>
      {usage.isPending && <p className="muted">Loading usage…</p>}
      <ErrorMessage error={usage.error} title="Cannot read your usage" />
      {usage.data !== undefined && (
        <>
          <div className="row">
            <button type="button" onClick={() => void usage.refetch()} disabled={usage.isFetching}>
              {usage.isFetching ? "Refreshing…" : "Refresh"}
            </button>
            <span
              className="muted"
              data-testid="usage-updated"
              data-updated-at={usage.dataUpdatedAt}
            >
              Updated {new Date(usage.dataUpdatedAt).toLocaleTimeString()}
            </span>
          </div>
          {usage.data.workspace_inodes === 0 && (
            <p className="empty usage-empty">
              Nothing stored yet: your workspace is created by your first run or upload.
            </p>
          )}
          <UsageTable data={usage.data} />
          <UsageNotes data={usage.data} />
        </>
      )}
    </section>
  );
}

function UsageTable({ data }: { data: UsageData }) {
  return (
    <table className="file-table usage-table" aria-label="Usage against your limits">
      <thead>
        <tr>
          <th scope="col">What</th>
          <th scope="col">Used</th>
          <th scope="col">Limit</th>
          <th scope="col" className="hide-narrow">
            Share
          </th>
        </tr>
      </thead>
      <tbody>
        {usageRows(data).map((row) => (
          <UsageTableRow key={row.key} row={row} />
        ))}
      </tbody>
    </table>
  );
}

function UsageTableRow({ row }: { row: UsageRow }) {
  const badge = STATE_BADGE[row.state];
  return (
    <tr data-usage={row.key} data-state={row.state}>
      <th scope="row">{row.label}</th>
      <td className="used">
        {row.used === undefined ? (
          <span className="muted">not measured</span>
        ) : (
          <data value={row.used.value} title={exact(row.key, row.used.value)}>
            {row.used.shown}
          </data>
        )}{" "}
        {badge !== undefined && <span className={badge.className}>{badge.text}</span>}
      </td>
      <td className="limit">
        {row.limit === undefined ? (
          <span className="muted" title="No per-user limit shown">
            —
          </span>
        ) : (
          <data value={row.limit.value} title={exact(row.key, row.limit.value)}>
            {row.limit.shown}
          </data>
        )}
      </td>
      <td className="hide-narrow share">
        {row.used !== undefined && row.limit !== undefined && (
          <UsageMeter
            label={row.label}
            used={row.used.value}
            limit={row.limit.value}
            state={row.state}
          />
        )}
      </td>
    </tr>
  );
}

/** The exact figure behind a rounded one ("97.7 KB" is 100,000 bytes). */
function exact(key: string, n: number): string | undefined {
  return key === "workspace_bytes" ? `${n.toLocaleString()} bytes` : undefined;
}

/** A bar of the share used, coloured by state (styles.css: "over" is red, not the UA's amber). */
function UsageMeter(p: { label: string; used: number; limit: number; state: UsageState }) {
  return (
    <span className="usage-share">
      <meter
        className={`usage-meter meter-${p.state}`}
        aria-label={`${p.label} used`}
        min={0}
        max={Math.max(p.limit, 1)}
        value={p.limit === 0 ? (p.used === 0 ? 0 : 1) : Math.min(p.used, p.limit)}
      />
      <span>{usedShare(p.used, p.limit)}</span>
    </span>
  );
}

/** What a figure at or over its limit means for the user, and what they can do. */
function UsageNotes({ data }: { data: UsageData }) {
  const { limits } = data;
  const over =
    data.workspace_bytes > limits.workspace_bytes ||
    data.workspace_inodes > limits.workspace_inodes;
  const full =
    !over &&
    (data.workspace_bytes === limits.workspace_bytes ||
      data.workspace_inodes === limits.workspace_inodes);
  return (
    <div className="stack usage-notes">
      {over && (
        <p className="error" role="alert">
          Your workspace is over its limit: new runs and commands fail with{" "}
          <code>quota_exceeded</code> until you delete files (a thread's Files tab) or an
          administrator raises your limit.
        </p>
      )}
      {full && (
        <p className="notice">
          Your workspace is full: new files and uploads are refused. Commands still run, so you can
          delete files to make room.
        </p>
      )}
      {data.queued_runs > 0 && (
        <p className="notice">
          {data.queued_runs === 1 ? "1 run waits" : `${data.queued_runs} runs wait`}: you can run{" "}
          {limits.max_concurrent_runs} at once, and waiting runs start as running ones finish.
        </p>
      )}
    </div>
  );
}
