/**
 * The extraction child's answer (extraction-process.ts → run-extraction-process.ts): one
 * JSON header line on stdout, then, for a success, exactly `textBytes` bytes of UTF-8 text.
 * The text is not inside the JSON so the parent can bound what it reads by bytes before it
 * parses anything.
 */
export type ExtractionReplyHeader =
  | { readonly ok: true; readonly truncated: boolean; readonly textBytes: number }
  | {
      readonly ok: false;
      /** True when a cap stopped the document (memory, depth, inflated size), not a bad file. */
      readonly limit: boolean;
      readonly message: string;
    };

/** A header line is at most this long; the message of a failure is cut to fit. */
export const MAX_REPLY_HEADER_BYTES = 4096;

/** What the child is asked to do, passed as its one argument (JSON). */
export interface ExtractionJob {
  readonly kind: "html" | "pdf" | "docx";
  /** The input was already cut (HTML beyond its input bound): the output is truncated. */
  readonly inputTruncated: boolean;
  readonly maxTextBytes: number;
  readonly maxDocxInflatedBytes: number;
  readonly maxDocxEntries: number;
  readonly maxHtmlDepth: number;
}
