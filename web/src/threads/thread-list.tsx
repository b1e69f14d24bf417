import { useQuery } from "@tanstack/react-query";
import { NavLink } from "react-router";
import { useConsole } from "../console-context.tsx";
import { ErrorMessage } from "../ui/error-message.tsx";
import { threadLabel } from "../ui/format.ts";
import { NewThreadDialog } from "./new-thread-dialog.tsx";

export function ThreadList() {
  const { api } = useConsole();
  const threads = useQuery({
    queryKey: ["threads"],
    queryFn: ({ signal }) => api.threads.list(signal),
  });
  return (
    <div className="thread-list">
      <NewThreadDialog />
      {threads.isPending && <p className="muted">Loading threads…</p>}
      <ErrorMessage error={threads.error} />
      {threads.data?.length === 0 && <p className="muted">No threads yet.</p>}
      <ul>
        {threads.data
          ?.filter((t) => t.parent_thread_id === null)
          .map((t) => (
            <li key={t.thread_id}>
              <NavLink to={`/threads/${t.thread_id}`}>
                {threadLabel(t)}
                {t.awaiting_approval !== undefined && (
                  <span
                    className="badge approval-badge"
                    data-testid="approval-badge"
                    title="A run of this thread waits for your approval"
                  >
                    {t.awaiting_approval} to approve
                  </span>
                )}
              </NavLink>
            </li>
          ))}
      </ul>
    </div>
  );
}
