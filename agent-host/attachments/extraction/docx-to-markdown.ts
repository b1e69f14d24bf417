import mammoth from "mammoth";
import { checkDocxArchive, type DocxArchiveLimits } from "./docx-archive-check.ts";
import { checkHtmlDepth } from "./html-depth.ts";
import { htmlToMarkdown } from "./html-to-markdown.ts";

/**
 * DOCX → HTML (mammoth) → Markdown (turndown), after the zip-bomb guard.
 *
 * Security: `externalFileAccess: false` keeps mammoth from following a document's links to
 * external files (a DOCX can reference `file:///etc/...` images; CVE-2025-11849), and
 * images are dropped without being read.
 */
export async function docxToMarkdown(
  bytes: Buffer,
  limits: DocxArchiveLimits & { readonly maxHtmlDepth: number },
): Promise<string> {
  await checkDocxArchive(bytes, limits);
  const result = await mammoth.convertToHtml(
    { buffer: bytes },
    {
      externalFileAccess: false,
      convertImage: mammoth.images.imgElement(async () => ({ src: "" })),
    },
  );
  // Nested tables or lists in the DOCX become nested HTML: the same depth bound applies.
  checkHtmlDepth(result.value, limits.maxHtmlDepth);
  return htmlToMarkdown(result.value, { dropImages: true });
}
