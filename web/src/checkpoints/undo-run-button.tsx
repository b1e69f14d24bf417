import { useQuery } from "@tanstack/react-query";
import { useConsole } from "../console-context.tsx";
import { ConfirmDialog } from "../ui/confirm-dialog.tsx";
import { ErrorMessage } from "../ui/error-message.tsx";
import { useRestore } from "./use-restore.ts";

/**
 * "Undo this run": restores the checkpoint taken before the run (its `checkpoint.created`),
 * when there is one. The files the run left become a checkpoint of their own, so the undo
 * can itself be undone from the Checkpoints tab.
 */
export function UndoRunButton({ threadId, runId }: { threadId: string; runId: string }) {
  const { api } = useConsole();
  const checkpoints = useQuery({
    queryKey: ["checkpoints", threadId],
    queryFn: ({ signal }) => api.checkpoints.list(threadId, signal),
  });
  const restore = useRestore(threadId);
  const before = checkpoints.data?.find((c) => c.run_id === runId);
  if (before === undefined) return null;
  return (
    <div className="undo-run" data-testid="undo-run">
      <ConfirmDialog
        trigger={
          <button type="button" className="subtle" disabled={restore.isPending}>
            Undo this run
          </button>
        }
        title="Undo this run?"
        description="The Workdir goes back to exactly how it was before this run. Its current files are kept as a checkpoint, so you can undo the undo."
        confirmLabel="Undo"
        onConfirm={() => restore.mutate(before.checkpoint_id)}
      />
      {restore.isSuccess && (
        <span className="muted" data-testid="undo-done">
          {" "}
          Undone. The run's files are saved as checkpoint{" "}
          {restore.data.saved.checkpoint_id.slice(0, 8)}.
        </span>
      )}
      <ErrorMessage error={restore.error} title="Not undone" />
    </div>
  );
}
