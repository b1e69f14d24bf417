import { runtimeWorkdirPath } from "../../shared/paths/runtime-paths.ts";

/** Marks the block, so a text that already carries one is recognised (no double injection). */
export const ATTACHMENT_CONTEXT_OPEN = "<workcell-attachments>";
export const ATTACHMENT_CONTEXT_CLOSE = "</workcell-attachments>";
/** Most attachments listed by name; older ones are summed up in one line. */
export const MAX_LISTED_ATTACHMENTS = 50;

/**
 * What the list shows of one attachment (Workdir-relative paths, as stored). Parsed when
 * `path` (the extraction) differs from `originalPath`.
 */
export interface ContextAttachment {
  readonly fileName: string;
  readonly path: string;
  readonly originalPath: string;
}

/**
 * The model-visible text of a run's user message (docs/architecture.md §7): the user's text,
 * then a short block listing the thread's attachments (oldest first, the newest
 * MAX_LISTED_ATTACHMENTS at most) by name and by their path inside the sandbox
 * (`/home/gem/user-data/<workdir>/uploads/…`).
 *
 * Pure, and applied by the run worker to the model's copy of the message only: the stored
 * message, the events and the history API keep the user's original text. It is also
 * idempotent: a text that already ends with an attachments block is returned unchanged, so
 * a resumed run that rebuilds its model messages from an earlier model copy does not list
 * the attachments twice. No attachments: the text unchanged.
 *
 * The names are the user's own (sanitized at upload: no control characters, no `/`), so
 * they cannot close the block early or forge lines of it.
 */
export function withAttachmentContext(
  userText: string,
  attachments: readonly ContextAttachment[],
  workdirPath: string,
): string {
  if (attachments.length === 0 || hasAttachmentContext(userText)) return userText;
  const root = runtimeWorkdirPath(workdirPath);
  const listed = attachments.slice(-MAX_LISTED_ATTACHMENTS);
  const lines = listed.map((attachment) => {
    const original = `${root}/${attachment.originalPath}`;
    return attachment.path !== attachment.originalPath
      ? `- ${attachment.fileName}: ${original} (extracted text: ${root}/${attachment.path})`
      : `- ${attachment.fileName}: ${original}`;
  });
  const earlier = attachments.length - listed.length;
  if (earlier > 0) lines.unshift(`- (${earlier} earlier attachments are also in ${root}/uploads/)`);
  return [
    userText,
    "",
    ATTACHMENT_CONTEXT_OPEN,
    "Files attached to this conversation (read them with your tools when they are relevant):",
    ...lines,
    ATTACHMENT_CONTEXT_CLOSE,
  ].join("\n");
}

/** True when `text` already ends with an attachments block. */
export function hasAttachmentContext(text: string): boolean {
  return (
    text.trimEnd().endsWith(ATTACHMENT_CONTEXT_CLOSE) && text.includes(ATTACHMENT_CONTEXT_OPEN)
  );
}
