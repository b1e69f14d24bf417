import type { WorkspaceFs } from "../../workspace/workspace-fs.ts";
import type { AttachmentImportLimits } from "../attachment-import-limits.ts";
import { decodeCutUtf8 } from "./bounded-text.ts";
import type { ExtractionKind } from "./extraction-kind.ts";
import { MAX_REPLY_HEADER_BYTES } from "./extraction-reply.ts";
import { createExtractionSlots } from "./extraction-slots.ts";
import { readPrefix } from "./read-prefix.ts";
import { runExtractionProcess } from "./run-extraction-process.ts";

export type ExtractionOutcome =
  | { readonly ok: true; readonly text: string; readonly truncated: boolean }
  | {
      readonly ok: false;
      /**
       * `too_large`: over maxParseInputBytes; `limit`: a cap of the extraction process
       * (memory, CPU, time, output, depth, inflated size) stopped it; `unreadable`: the
       * parser failed.
       */
      readonly reason: "too_large" | "limit" | "unreadable";
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
  | "maxHtmlDepth"
  | "extractionTimeoutMs"
  | "extractionCpuSeconds"
  | "extractionAddressSpaceMb"
  | "extractionHeapMb"
  | "maxConcurrentExtractions"
>;

/**
 * The extractor: reads the landed file back through the safe file layer (never by host
 * path), then
 * * text (plain, Markdown, CSV, JSON): its first maxExtractedTextBytes, as UTF-8 (invalid
 *   sequences become U+FFFD), on this thread: nothing is parsed;
 * * HTML: its first maxHtmlInputBytes, converted in an extraction child process;
 * * PDF, DOCX: the whole file (at most maxParseInputBytes), converted in a child process.
 * The file streams from the Workdir to the child's stdin: the agent-host never holds it.
 * At most maxConcurrentExtractions children run at once; the extractor is made once per
 * data plane, so that is the node's bound.
 */
export function createTextExtractor(limits: ExtractorLimits): TextExtractor {
  const slots = createExtractionSlots(limits.maxConcurrentExtractions);
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
      const release = await slots.acquire(signal);
      const reader = await fs.openRead(path, { signal }).catch((error: unknown) => {
        release();
        throw error;
      });
      try {
        const length = Math.min(reader.info.size, inputLimit);
        const input =
          length === 0
            ? emptyInput()
            : reader.stream({ range: { start: 0, end: length - 1 }, signal });
        const outcome = await runExtractionProcess(
          {
            kind,
            inputTruncated: reader.info.size > length,
            maxTextBytes: limits.maxExtractedTextBytes,
            maxDocxInflatedBytes: limits.maxDocxInflatedBytes,
            maxDocxEntries: limits.maxDocxEntries,
            maxHtmlDepth: limits.maxHtmlDepth,
          },
          input,
          {
            timeoutMs: limits.extractionTimeoutMs,
            cpuSeconds: limits.extractionCpuSeconds,
            addressSpaceMb: limits.extractionAddressSpaceMb,
            heapMb: limits.extractionHeapMb,
            maxOutputBytes: MAX_REPLY_HEADER_BYTES + limits.maxExtractedTextBytes,
          },
          signal,
        );
        if (outcome.ok) return outcome;
        return {
          ok: false,
          reason: outcome.limit ? "limit" : "unreadable",
          message: outcome.message,
        };
      } finally {
        reader.close();
        release();
      }
    },
  };
}

async function* emptyInput(): AsyncIterable<Uint8Array> {}

/** UTF-8 text of a prefix; a cut prefix drops a character split at its end. */
function utf8Text(bytes: Uint8Array, cut: boolean): string {
  return cut ? decodeCutUtf8(bytes) : new TextDecoder().decode(bytes);
}
