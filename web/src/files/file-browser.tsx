import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { Link } from "react-router";
import { ConsoleApiError } from "../api/console-api.ts";
import type { FileEntry } from "../api/types.ts";
import { useConsole } from "../console-context.tsx";
import { ConfirmDialog } from "../ui/confirm-dialog.tsx";
import { ErrorMessage } from "../ui/error-message.tsx";
import { formatBytes, formatTime } from "../ui/format.ts";
import { useFileDrop } from "../ui/use-file-drop.ts";
import { FilePreview } from "./file-preview.tsx";
import { NewFolderDialog } from "./new-folder-dialog.tsx";
import { baseName, filesUrl, joinPath, normalizeUrlPath, parentOf } from "./workdir-path.ts";

type Listing = { dir: string; file: string | undefined; items: FileEntry[] };

type UploadOutcome = { uploaded: string[]; conflicts: string[]; failed: Array<[string, unknown]> };

export function FileBrowser({ threadId, path: urlPath }: { threadId: string; path: string }) {
  const { api } = useConsole();
  const queryClient = useQueryClient();
  const files = api.threads.files(threadId);
  const path = normalizeUrlPath(decodeURIComponent(urlPath));

  const listing = useQuery({
    queryKey: ["files", threadId, path],
    queryFn: async ({ signal }): Promise<Listing> => {
      try {
        return { dir: path, file: undefined, items: await files.list(path, signal) };
      } catch (error) {
        // The data plane answers 400 for listing a file: the URL names a file, so show its
        // directory with the file open.
        if (!(error instanceof ConsoleApiError) || error.code !== "invalid_request") throw error;
        const dir = parentOf(path);
        return { dir, file: baseName(path), items: await files.list(dir, signal) };
      }
    },
  });
  const dir = listing.data?.dir ?? path;
  const refresh = () => queryClient.invalidateQueries({ queryKey: ["files", threadId] });

  const upload = useMutation({
    mutationFn: async (picked: File[]): Promise<UploadOutcome> => {
      const outcome: UploadOutcome = { uploaded: [], conflicts: [], failed: [] };
      for (const file of picked) {
        try {
          await files.write(joinPath(dir, file.name), file);
          outcome.uploaded.push(file.name);
        } catch (error) {
          if (error instanceof ConsoleApiError && error.code === "conflict") {
            outcome.conflicts.push(file.name);
          } else outcome.failed.push([file.name, error]);
        }
      }
      return outcome;
    },
    onSettled: () => void refresh(),
  });
  const remove = useMutation({
    mutationFn: (target: string) => files.delete(target),
    onSuccess: () => void refresh(),
  });

  const drop = useFileDrop((dropped) => upload.mutate(dropped));

  const crumbs = dir.split("/").filter((p) => p !== "");
  return (
    // The whole panel is the drop target; the file input offers the same by keyboard.
    <section
      aria-label="Workdir files"
      className={`files${drop.dragging ? " dragging" : ""}`}
      {...drop.handlers}
      data-testid="file-browser"
    >
      <div className="files-toolbar">
        <nav aria-label="Folder" className="crumbs">
          <Link to={filesUrl(threadId, "/")}>Workdir</Link>
          {crumbs.map((part, i) => (
            <span key={crumbs.slice(0, i + 1).join("/")}>
              {" / "}
              <Link to={filesUrl(threadId, `/${crumbs.slice(0, i + 1).join("/")}`)}>{part}</Link>
            </span>
          ))}
        </nav>
        <label className="button">
          Upload files
          <input
            type="file"
            multiple
            className="visually-hidden"
            data-testid="file-upload-input"
            onChange={(e) => {
              const picked = Array.from(e.target.files ?? []);
              e.target.value = "";
              if (picked.length > 0) upload.mutate(picked);
            }}
          />
        </label>
        <NewFolderDialog threadId={threadId} dir={dir} onCreated={() => void refresh()} />
      </div>
      <p className="muted drop-hint">Drop files here to upload them into this folder.</p>
      {upload.isPending && <p className="muted">Uploading…</p>}
      {upload.data !== undefined && <UploadReport outcome={upload.data} />}
      <ErrorMessage error={listing.error} />
      <ErrorMessage error={remove.error} title="Delete failed" />
      <div className="files-body">
        <table className="file-table">
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Size</th>
              <th scope="col" className="hide-narrow">
                Modified
              </th>
              <th scope="col">
                <span className="visually-hidden">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {listing.isPending && (
              <tr>
                <td colSpan={4} className="muted">
                  Loading…
                </td>
              </tr>
            )}
            {listing.data?.items.length === 0 && (
              <tr>
                <td colSpan={4} className="muted">
                  This folder is empty.
                </td>
              </tr>
            )}
            {listing.data?.items.map((entry) => {
              const target = joinPath(dir, entry.name);
              return (
                <tr
                  key={entry.name}
                  className={entry.name === listing.data?.file ? "selected" : ""}
                >
                  <td>
                    <Link to={filesUrl(threadId, target)}>
                      {entry.type === "dir" ? `${entry.name}/` : entry.name}
                    </Link>
                  </td>
                  <td>{entry.type === "dir" ? "" : formatBytes(entry.size)}</td>
                  <td className="hide-narrow">{formatTime(entry.mtime)}</td>
                  <td>
                    <ConfirmDialog
                      trigger={
                        <button
                          type="button"
                          className="subtle"
                          aria-label={`Delete ${entry.name}`}
                        >
                          Delete
                        </button>
                      }
                      title={`Delete ${entry.name}?`}
                      description={
                        entry.type === "dir"
                          ? "The folder and everything in it are removed from the Workdir."
                          : "The file is removed from the Workdir."
                      }
                      confirmLabel="Delete"
                      onConfirm={() => remove.mutate(target)}
                    />
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
        {listing.data?.file !== undefined && (
          <FilePreview threadId={threadId} path={joinPath(dir, listing.data.file)} />
        )}
      </div>
    </section>
  );
}

function UploadReport({ outcome }: { outcome: UploadOutcome }) {
  return (
    <div className="upload-report" role="status">
      {outcome.uploaded.length > 0 && <p>Uploaded: {outcome.uploaded.join(", ")}</p>}
      {outcome.conflicts.length > 0 && (
        <p className="error" data-testid="upload-conflict">
          Already exists, not overwritten: {outcome.conflicts.join(", ")}. Rename the file or delete
          the existing one first.
        </p>
      )}
      {outcome.failed.map(([name, error]) => (
        <ErrorMessage key={name} error={error} title={name} />
      ))}
    </div>
  );
}
