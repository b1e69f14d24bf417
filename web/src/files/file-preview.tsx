import { useQuery } from "@tanstack/react-query";
import { useEffect, useMemo } from "react";
import { useConsole } from "../console-context.tsx";
import { ErrorMessage } from "../ui/error-message.tsx";
import { formatBytes } from "../ui/format.ts";
import { MarkdownPreview } from "./markdown-preview.tsx";
import { baseName, previewKind } from "./workdir-path.ts";

/** Text previews stop here; the rest is a download. */
export const MAX_TEXT_PREVIEW_BYTES = 1024 * 1024;

export function downloadBlob(blob: Blob, name: string): void {
  const url = URL.createObjectURL(blob);
  const a = document.createElement("a");
  a.href = url;
  a.download = name;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
}

export function FilePreview({ threadId, path }: { threadId: string; path: string }) {
  const { api } = useConsole();
  const name = baseName(path);
  const file = useQuery({
    queryKey: ["file", threadId, path],
    queryFn: async ({ signal }) => {
      const blob = await api.threads.files(threadId).read(path, signal);
      const kind = previewKind(name, blob.type);
      const text =
        (kind === "text" || kind === "markdown") && blob.size <= MAX_TEXT_PREVIEW_BYTES
          ? await blob.text()
          : undefined;
      return { blob, kind, text };
    },
  });
  // Images and PDFs render from a blob URL: the bytes came with a capability header.
  const url = useMemo(
    () =>
      file.data !== undefined && (file.data.kind === "image" || file.data.kind === "pdf")
        ? URL.createObjectURL(
            file.data.kind === "pdf"
              ? new Blob([file.data.blob], { type: "application/pdf" })
              : file.data.blob,
          )
        : undefined,
    [file.data],
  );
  useEffect(() => () => (url === undefined ? undefined : URL.revokeObjectURL(url)), [url]);

  return (
    <section className="preview" aria-label={`Preview of ${name}`}>
      <header className="preview-header">
        <strong>{name}</strong>
        {file.data !== undefined && (
          <>
            <span className="muted">{formatBytes(file.data.blob.size)}</span>
            <button type="button" onClick={() => downloadBlob(file.data.blob, name)}>
              Download
            </button>
          </>
        )}
      </header>
      {file.isPending && <p className="muted">Loading…</p>}
      <ErrorMessage error={file.error} />
      {file.data?.kind === "markdown" && file.data.text !== undefined && (
        <div className="markdown" data-testid="file-content">
          <MarkdownPreview text={file.data.text} />
        </div>
      )}
      {file.data?.kind === "text" && file.data.text !== undefined && (
        <pre className="file-text" data-testid="file-content">
          {file.data.text}
        </pre>
      )}
      {file.data?.kind === "image" && url !== undefined && (
        <img className="file-image" src={url} alt={name} />
      )}
      {file.data?.kind === "pdf" && url !== undefined && (
        <iframe className="file-pdf" src={url} title={name} />
      )}
      {file.data !== undefined &&
        file.data.text === undefined &&
        file.data.kind !== "image" &&
        file.data.kind !== "pdf" && (
          <p className="muted">No preview for this file; download it instead.</p>
        )}
    </section>
  );
}
