import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useNavigate } from "react-router";
import { useConsole } from "../console-context.tsx";
import { ConfirmDialog } from "../ui/confirm-dialog.tsx";
import { ErrorMessage } from "../ui/error-message.tsx";
import { formatBytes, formatTime } from "../ui/format.ts";
import { useRestore } from "./use-restore.ts";

const SOURCES = { manual: "taken by you", run: "before a run", restore: "replaced by a restore" };

/** A thread's checkpoints, newest first: checkpoint now, restore one, fork from one. */
export function CheckpointsPanel({ threadId }: { threadId: string }) {
  const { api } = useConsole();
  const queryClient = useQueryClient();
  const navigate = useNavigate();
  const list = useQuery({
    queryKey: ["checkpoints", threadId],
    queryFn: ({ signal }) => api.checkpoints.list(threadId, signal),
  });
  const take = useMutation({
    mutationFn: () => api.checkpoints.create(threadId),
    onSuccess: () => void queryClient.invalidateQueries({ queryKey: ["checkpoints", threadId] }),
  });
  const restore = useRestore(threadId);
  const fork = useMutation({
    mutationFn: (checkpointId: string) => api.checkpoints.fork(threadId, checkpointId),
    onSuccess: (thread) => {
      void queryClient.invalidateQueries({ queryKey: ["threads"] });
      navigate(`/threads/${thread.thread_id}`);
    },
  });

  return (
    <div className="checkpoints stack">
      <div className="row">
        <button
          type="button"
          className="primary"
          disabled={take.isPending}
          onClick={() => take.mutate()}
        >
          Checkpoint now
        </button>
        <span className="muted">
          A copy of the Workdir (symlinks and special files are not kept). Restoring one makes the
          Workdir exactly that copy; its files at that moment are kept as a new checkpoint.
        </span>
      </div>
      <ErrorMessage error={take.error ?? restore.error ?? fork.error} />
      {restore.isSuccess && (
        <p className="muted" data-testid="restore-done">
          Restored. The files it replaced are checkpoint{" "}
          {restore.data.saved.checkpoint_id.slice(0, 8)}.
        </p>
      )}
      {list.isPending && <p className="muted">Loading checkpoints…</p>}
      <ErrorMessage error={list.error} />
      {list.data?.length === 0 && <p className="muted">No checkpoints on this thread yet.</p>}
      <ul className="checkpoint-list" data-testid="checkpoint-list">
        {list.data?.map((c) => (
          <li key={c.checkpoint_id} className="card row">
            <span>
              <strong>{c.label ?? SOURCES[c.source]}</strong>{" "}
              <span className="muted">
                {formatTime(c.created_at)} · {c.files} files · {formatBytes(c.bytes)}
                {c.skipped > 0 ? ` · ${c.skipped} links or special files not kept` : ""}
              </span>
            </span>
            <ConfirmDialog
              trigger={
                <button type="button" disabled={restore.isPending}>
                  Restore
                </button>
              }
              title="Restore this checkpoint?"
              description="The Workdir becomes exactly this checkpoint. Its current files are kept as a new checkpoint first."
              confirmLabel="Restore"
              onConfirm={() => restore.mutate(c.checkpoint_id)}
            />
            <button
              type="button"
              className="subtle"
              disabled={fork.isPending}
              onClick={() => fork.mutate(c.checkpoint_id)}
            >
              Fork
            </button>
          </li>
        ))}
      </ul>
    </div>
  );
}
