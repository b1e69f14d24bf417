import { boundedText, type ExtractedText } from "./bounded-text.ts";
import { docxToMarkdown } from "./docx-to-markdown.ts";
import { htmlToMarkdown } from "./html-to-markdown.ts";
import { pdfToText } from "./pdf-to-text.ts";

/** What the extraction worker is asked to do (its `workerData`). */
export interface DocumentExtractionRequest {
  readonly kind: "html" | "pdf" | "docx";
  readonly bytes: Uint8Array;
  /** The input was already cut (HTML beyond its input bound): the output is truncated. */
  readonly inputTruncated: boolean;
  readonly maxTextBytes: number;
  readonly maxDocxInflatedBytes: number;
  readonly maxDocxEntries: number;
}

/**
 * Converts one document to text, bounded to `maxTextBytes`. Pure in-memory work: it runs
 * inside the extraction worker thread (extraction-worker.ts), never on the data plane's
 * own thread, because the libraries parse untrusted input with unbounded CPU and memory.
 */
export async function extractDocument(request: DocumentExtractionRequest): Promise<ExtractedText> {
  const out = boundedText(request.maxTextBytes);
  switch (request.kind) {
    case "html":
      out.append(htmlToMarkdown(new TextDecoder().decode(request.bytes)));
      break;
    case "pdf":
      await pdfToText(request.bytes, out);
      break;
    case "docx":
      out.append(
        await docxToMarkdown(Buffer.from(request.bytes), {
          maxInflatedBytes: request.maxDocxInflatedBytes,
          maxEntries: request.maxDocxEntries,
        }),
      );
      break;
  }
  const result = out.result();
  return { text: result.text, truncated: result.truncated || request.inputTruncated };
}
