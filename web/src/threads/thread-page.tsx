import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { NavLink, useNavigate, useParams } from "react-router";
import { AttachmentsPanel } from "../attachments/attachments-panel.tsx";
import { Conversation } from "../chat/conversation.tsx";
import { CheckpointsPanel } from "../checkpoints/checkpoints-panel.tsx";
import { useConsole } from "../console-context.tsx";
import { FileBrowser } from "../files/file-browser.tsx";
import { ConfirmDialog } from "../ui/confirm-dialog.tsx";
import { ErrorMessage, isNotFound } from "../ui/error-message.tsx";
import { threadLabel } from "../ui/format.ts";

/**
 * /threads/<id> (chat), /threads/<id>/files/<path> (files), /threads/<id>/attachments,
 * /threads/<id>/checkpoints.
 */
export function ThreadPage() {
  const { api } = useConsole();
  const { threadId = "", "*": rest = "" } = useParams();
  const navigate = useNavigate();
  const queryClient = useQueryClient();
  const thread = useQuery({
    queryKey: ["thread", threadId],
    queryFn: ({ signal }) => api.threads.get(threadId, signal),
  });
  const remove = useMutation({
    mutationFn: () => api.threads.delete(threadId),
    onSuccess: () => {
      void queryClient.invalidateQueries({ queryKey: ["threads"] });
      navigate("/");
    },
  });

  if (thread.isPending) return <p className="muted">Loading thread…</p>;
  if (thread.isError) {
    if (isNotFound(thread.error)) {
      return (
        <section className="empty" data-testid="thread-not-found">
          <h2>Thread not found</h2>
          <p>It does not exist, was deleted, or belongs to someone else.</p>
        </section>
      );
    }
    return <ErrorMessage error={thread.error} title="Cannot load the thread" />;
  }

  const [section, ...pathParts] = rest.split("/");
  const base = `/threads/${threadId}`;
  return (
    <section className="thread">
      <header className="thread-header">
        <div className="thread-title">
          <h2>{threadLabel(thread.data)}</h2>
          <code className="muted">{thread.data.workdir_path}</code>
        </div>
        <nav aria-label="Thread" className="tabs">
          <NavLink to={base} end>
            Chat
          </NavLink>
          <NavLink to={`${base}/files`}>Files</NavLink>
          <NavLink to={`${base}/attachments`}>Attachments</NavLink>
          <NavLink to={`${base}/checkpoints`}>Checkpoints</NavLink>
        </nav>
        <ConfirmDialog
          trigger={
            <button type="button" className="subtle">
              Delete thread
            </button>
          }
          title="Delete this thread?"
          description="The conversation disappears from your list. Its files stay in your workspace."
          confirmLabel="Delete"
          onConfirm={() => remove.mutate()}
        />
      </header>
      <ErrorMessage error={remove.error} />
      {section === "files" ? (
        <FileBrowser threadId={threadId} path={`/${pathParts.join("/")}`} />
      ) : section === "attachments" ? (
        <AttachmentsPanel threadId={threadId} />
      ) : section === "checkpoints" ? (
        <CheckpointsPanel threadId={threadId} />
      ) : (
        <Conversation threadId={threadId} />
      )}
    </section>
  );
}
