/** Workdir-relative paths of the data plane: "/" is the root, no trailing slash otherwise. */
export function joinPath(dir: string, name: string): string {
  return dir === "/" ? `/${name}` : `${dir}/${name}`;
}

export function parentOf(path: string): string {
  const i = path.lastIndexOf("/");
  return i <= 0 ? "/" : path.slice(0, i);
}

export function baseName(path: string): string {
  return path.slice(path.lastIndexOf("/") + 1);
}

/** "/a/b/" or "/a//b" from a URL → "/a/b". */
export function normalizeUrlPath(path: string): string {
  const parts = path.split("/").filter((p) => p !== "");
  return `/${parts.join("/")}`;
}

/** The console URL of a Workdir path. */
export function filesUrl(threadId: string, path: string): string {
  const encoded = path
    .split("/")
    .filter((p) => p !== "")
    .map(encodeURIComponent)
    .join("/");
  return `/threads/${threadId}/files${encoded === "" ? "" : `/${encoded}`}`;
}

export type PreviewKind = "markdown" | "text" | "image" | "pdf" | "none";

const TEXT =
  /\.(txt|log|json|ya?ml|toml|csv|tsv|ts|tsx|js|jsx|mjs|py|sh|rb|go|rs|java|c|h|cpp|css|html|xml|ini|cfg|conf|env|sql)$/i;

export function previewKind(name: string, contentType: string): PreviewKind {
  if (/\.(md|markdown)$/i.test(name)) return "markdown";
  if (/\.pdf$/i.test(name) || contentType === "application/pdf") return "pdf";
  if (/\.(png|jpe?g|gif|webp|svg|avif|bmp)$/i.test(name) || contentType.startsWith("image/")) {
    return "image";
  }
  if (TEXT.test(name) || contentType.startsWith("text/") || !name.includes(".")) return "text";
  return "none";
}
