import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { Checkbox, Label, Progress } from "radix-ui";
import { useState } from "react";
import { Link } from "react-router";
import type { UploadProgress } from "../api/console-api.ts";
import { useConsole } from "../console-context.tsx";
import { filesUrl } from "../files/workdir-path.ts";
import { ConfirmDialog } from "../ui/confirm-dialog.tsx";
import { ErrorMessage } from "../ui/error-message.tsx";
import { formatBytes, formatTime } from "../ui/format.ts";
import { useFileDrop } from "../ui/use-file-drop.ts";

/** Pick → presigned upload with progress → confirm (optionally extracting text) → listed. */
export function AttachmentsPanel({ threadId }: { threadId: string }) {
  const { api } = useConsole();
  const queryClient = useQueryClient();
  const [picked, setPicked] = useState<File[]>([]);
  const [parse, setParse] = useState(true);
  const [progress, setProgress] = useState<UploadProgress | undefined>(undefined);
  const list = useQuery({
    queryKey: ["attachments", threadId],
    queryFn: ({ signal }) => api.attachments.list(threadId, signal),
  });
  const refresh = () => {
    void queryClient.invalidateQueries({ queryKey: ["attachments", threadId] });
    void queryClient.invalidateQueries({ queryKey: ["files", threadId] });
  };
  const upload = useMutation({
    mutationFn: () => api.attachments.upload(threadId, picked, { parse, onProgress: setProgress }),
    onSuccess: () => {
      setPicked([]);
      refresh();
    },
    onSettled: () => setProgress(undefined),
  });
  const remove = useMutation({
    mutationFn: (fileId: string) => api.attachments.delete(threadId, fileId),
    onSuccess: refresh,
  });
  // Dropped files join the pick, as if chosen with the file input; "Attach" sends them.
  const drop = useFileDrop((dropped) => setPicked((current) => [...current, ...dropped]));
  const percent =
    progress === undefined || progress.total === 0 ? 0 : (progress.loaded / progress.total) * 100;

  return (
    <div className="attachments">
      <form
        className={`card stack drop-target${drop.dragging ? " dragging" : ""}`}
        data-testid="attachment-drop"
        {...drop.handlers}
        onSubmit={(e) => {
          e.preventDefault();
          if (picked.length > 0) upload.mutate();
        }}
      >
        <Label.Root htmlFor="attachment-input">Files to attach</Label.Root>
        <input
          id="attachment-input"
          type="file"
          multiple
          data-testid="attachment-input"
          onChange={(e) => setPicked(Array.from(e.target.files ?? []))}
        />
        <p className="muted drop-hint">Or drop files on this box.</p>
        {picked.length > 0 && (
          <ul className="picked" aria-label="Files to attach" data-testid="picked-files">
            {picked.map((f, i) => (
              // Two files may share a name (from two folders): the index keeps keys apart.
              // biome-ignore lint/suspicious/noArrayIndexKey: a pick list, never reordered
              <li key={`${i}:${f.name}`}>
                {f.name} <span className="muted">{formatBytes(f.size)}</span>
              </li>
            ))}
          </ul>
        )}
        <div className="row">
          <Checkbox.Root
            id="extract-text"
            className="checkbox"
            checked={parse}
            onCheckedChange={(v) => setParse(v === true)}
          >
            <Checkbox.Indicator>✓</Checkbox.Indicator>
          </Checkbox.Root>
          <Label.Root htmlFor="extract-text">
            Extract text (Markdown in <code>uploads/attachments/</code>)
          </Label.Root>
        </div>
        <div className="row">
          <button
            type="submit"
            className="primary"
            disabled={picked.length === 0 || upload.isPending}
          >
            {upload.isPending ? "Uploading…" : "Attach"}
          </button>
          <Progress.Root className="progress" value={percent} aria-label="Upload progress">
            <Progress.Indicator className="progress-bar" style={{ width: `${percent}%` }} />
          </Progress.Root>
          {progress !== undefined && (
            <span className="muted">
              {formatBytes(progress.loaded)} / {formatBytes(progress.total)}
            </span>
          )}
        </div>
        <ErrorMessage error={upload.error} title="Attachment failed" />
      </form>
      {list.isPending && <p className="muted">Loading attachments…</p>}
      <ErrorMessage error={list.error} />
      <ErrorMessage error={remove.error} title="Remove failed" />
      {list.data?.length === 0 && <p className="muted">No attachments on this thread.</p>}
      <ul className="attachment-list" data-testid="attachment-list">
        {list.data?.map((a) => (
          <li key={a.file_id}>
            <Link to={filesUrl(threadId, `/${a.original_path}`)}>{a.file_name}</Link>{" "}
            <span className="muted">
              {formatBytes(a.size)} · {formatTime(a.uploaded_at)}
            </span>{" "}
            {a.status === "parsed" && (
              <Link to={filesUrl(threadId, `/${a.path}`)} className="badge badge-succeeded">
                text: {a.path}
              </Link>
            )}
            <ConfirmDialog
              trigger={
                <button type="button" className="subtle">
                  Remove
                </button>
              }
              title={`Remove ${a.file_name}?`}
              description="The attachment leaves the thread and its files are removed from the Workdir."
              confirmLabel="Remove"
              onConfirm={() => remove.mutate(a.file_id)}
            />
          </li>
        ))}
      </ul>
    </div>
  );
}
