import { boundedText, type ExtractedText } from "./bounded-text.ts";
import { docxToMarkdown } from "./docx-to-markdown.ts";
import type { ExtractionJob } from "./extraction-reply.ts";
import { checkHtmlDepth } from "./html-depth.ts";
import { htmlToMarkdown } from "./html-to-markdown.ts";
import { pdfToText } from "./pdf-to-text.ts";

/**
 * Converts one document to text, bounded to `maxTextBytes`. Pure in-memory work: it runs
 * only inside the extraction child process (extraction-process.ts), never in the
 * agent-host, because the libraries parse untrusted input with unbounded CPU and memory.
 */
export async function extractDocument(
  job: ExtractionJob,
  bytes: Uint8Array,
): Promise<ExtractedText> {
  const out = boundedText(job.maxTextBytes);
  switch (job.kind) {
    case "html": {
      const html = new TextDecoder().decode(bytes);
      checkHtmlDepth(html, job.maxHtmlDepth);
      out.append(htmlToMarkdown(html));
      break;
    }
    case "pdf":
      await pdfToText(bytes, out);
      break;
    case "docx":
      out.append(
        await docxToMarkdown(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength), {
          maxInflatedBytes: job.maxDocxInflatedBytes,
          maxEntries: job.maxDocxEntries,
          maxHtmlDepth: job.maxHtmlDepth,
        }),
      );
      break;
  }
  const result = out.result();
  return { text: result.text, truncated: result.truncated || job.inputTruncated };
}
