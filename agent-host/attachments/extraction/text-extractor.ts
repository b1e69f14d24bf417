import type { WorkspaceFs } from "../../workspace/workspace-fs.ts";
import type { AttachmentImportLimits } from "../attachment-import-limits.ts";
import { decodeCutUtf8 } from "./bounded-text.ts";
import type { ExtractionKind } from "./extraction-kind.ts";
import { readPrefix } from "./read-prefix.ts";
import { runExtractionWorker } from "./run-extraction-worker.ts";

export type ExtractionOutcome =
  | { readonly ok: true; readonly text: string; readonly truncated: boolean }
  | {
      readonly ok: false;
      /** `too_large`: over maxParseInputBytes; `unreadable`: the parser failed or gave up. */
      readonly reason: "too_large" | "unreadable";
      readonly message: string;
    };

/** Extracts the text of a file that already landed in the Workdir. */
export interface TextExtractor {
  extract(
    fs: WorkspaceFs,
    path: string,
    kind: ExtractionKind,
    signal: AbortSignal,
  ): Promise<ExtractionOutcome>;
}

type ExtractorLimits = Pick<
  AttachmentImportLimits,
  | "maxExtractedTextBytes"
  | "maxParseInputBytes"
  | "maxHtmlInputBytes"
  | "maxDocxInflatedBytes"
  | "maxDocxEntries"
  | "extractionTimeoutMs"
  | "extractionHeapMb"
>;

/**
 * The extractor: reads the landed file back through the safe file layer (never by host
 * path), then
 * * text (plain, Markdown, CSV, JSON): its first maxExtractedTextBytes, as UTF-8 (invalid
 *   sequences become U+FFFD), on this thread: nothing is parsed;
 * * HTML: its first maxHtmlInputBytes, converted in a worker thread;
 * * PDF, DOCX: the whole file (at most maxParseInputBytes), converted in a worker thread.
 */
export function createTextExtractor(limits: ExtractorLimits): TextExtractor {
  return {
    async extract(fs, path, kind, signal) {
      if (kind === "text") {
        const prefix = await readPrefix(fs, path, limits.maxExtractedTextBytes, signal);
        return {
          ok: true,
          text: utf8Text(prefix.bytes, prefix.truncated),
          truncated: prefix.truncated,
        };
      }
      // PDF and DOCX need the whole file: refuse a large one before reading any of it.
      const { size } = await fs.stat(path, { signal });
      if (kind !== "html" && size > limits.maxParseInputBytes) {
        return {
          ok: false,
          reason: "too_large",
          message: `Files over ${limits.maxParseInputBytes} bytes cannot be parsed: confirm without parse.`,
        };
      }
      const inputLimit = kind === "html" ? limits.maxHtmlInputBytes : limits.maxParseInputBytes;
      const prefix = await readPrefix(fs, path, inputLimit, signal);
      const outcome = await runExtractionWorker(
        {
          kind,
          bytes: prefix.bytes,
          inputTruncated: prefix.truncated,
          maxTextBytes: limits.maxExtractedTextBytes,
          maxDocxInflatedBytes: limits.maxDocxInflatedBytes,
          maxDocxEntries: limits.maxDocxEntries,
        },
        { timeoutMs: limits.extractionTimeoutMs, heapMb: limits.extractionHeapMb, signal },
      );
      if (outcome.ok) return outcome;
      return { ok: false, reason: "unreadable", message: outcome.message };
    },
  };
}

/** UTF-8 text of a prefix; a cut prefix drops a character split at its end. */
function utf8Text(bytes: Uint8Array, cut: boolean): string {
  return cut ? decodeCutUtf8(bytes) : new TextDecoder().decode(bytes);
}
