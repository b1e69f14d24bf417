/**
 * How a file's text is extracted: `text` is copied as-is (plain text, Markdown, CSV, JSON);
 * the others are converted by a maintained library in a worker thread.
 */
export type ExtractionKind = "text" | "html" | "pdf" | "docx";

const BY_MEDIA_TYPE: Readonly<Record<string, ExtractionKind>> = {
  "text/plain": "text",
  "text/markdown": "text",
  "text/x-markdown": "text",
  "text/csv": "text",
  "application/csv": "text",
  "application/json": "text",
  "text/json": "text",
  "text/html": "html",
  "application/xhtml+xml": "html",
  "application/pdf": "pdf",
  "application/vnd.openxmlformats-officedocument.wordprocessingml.document": "docx",
};

const BY_EXTENSION: Readonly<Record<string, ExtractionKind>> = {
  txt: "text",
  text: "text",
  md: "text",
  markdown: "text",
  csv: "text",
  json: "text",
  html: "html",
  htm: "html",
  xhtml: "html",
  pdf: "pdf",
  docx: "docx",
};

/**
 * Types that say nothing about the content: browsers send them for any file they do not
 * recognise (a `.md` often arrives as `application/octet-stream` or with no type).
 */
const GENERIC_MEDIA_TYPES = new Set(["application/octet-stream", "binary/octet-stream"]);

/**
 * The extraction for a declared content type, falling back to the file name's extension
 * only when the type is generic; `undefined` when the type is not supported (400). The
 * declared type wins over the extension: a `.txt` declared as `image/png` is not text.
 */
export function extractionKindOf(
  contentType: string,
  fileName: string,
): ExtractionKind | undefined {
  const media = mediaTypeOf(contentType);
  const byType = BY_MEDIA_TYPE[media];
  if (byType !== undefined) return byType;
  if (media.endsWith("+json")) return "text";
  if (!GENERIC_MEDIA_TYPES.has(media)) return undefined;
  const dot = fileName.lastIndexOf(".");
  if (dot <= 0) return undefined;
  return BY_EXTENSION[fileName.slice(dot + 1).toLowerCase()];
}

/** `Text/HTML; charset=UTF-8` → `text/html`. */
export function mediaTypeOf(contentType: string): string {
  return (contentType.split(";")[0] ?? "").trim().toLowerCase();
}
