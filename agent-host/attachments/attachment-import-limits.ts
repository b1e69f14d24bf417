import { MAX_ATTACHMENT_BYTES } from "../../shared/contracts/attachment.ts";

/**
 * Every bound of the attachment import (POST /internal/v1/attachments/import), with its
 * unit. The data plane takes a partial override, so tests can shrink any of them.
 */
export interface AttachmentImportLimits {
  /** Largest object imported; functions/ refuses bigger announcements earlier (413). */
  readonly maxObjectBytes: number;
  /** The JSON body of an import request: 20 items of at most ~1.5 KiB each, with room. */
  readonly maxRequestBodyBytes: number;
  /** `report (1).pdf` … `report (N).pdf` are tried before a random suffix. */
  readonly maxNumberedNames: number;
  /** Random-suffix names tried after the numbered ones, before giving up (409). */
  readonly maxRandomNames: number;
  /** Extracted text written to uploads/attachments/<name>.md; the rest is cut (`truncated`). */
  readonly maxExtractedTextBytes: number;
  /**
   * HTML / PDF / DOCX are parsed from memory (their formats need the whole file): a larger
   * file with `parse: true` is refused (400) instead of being loaded.
   */
  readonly maxParseInputBytes: number;
  /** HTML beyond this many bytes is not converted (the Markdown is marked truncated). */
  readonly maxHtmlInputBytes: number;
  /** DOCX: most bytes all entries of the archive may inflate to (zip-bomb guard). */
  readonly maxDocxInflatedBytes: number;
  /** DOCX: most entries in the archive. */
  readonly maxDocxEntries: number;
  /** HTML (and a DOCX's HTML) nested deeper than this is refused before it is parsed. */
  readonly maxHtmlDepth: number;
  /** One extraction (in its child process) is killed after this long, wall clock. */
  readonly extractionTimeoutMs: number;
  /** RLIMIT_CPU of the extraction process. */
  readonly extractionCpuSeconds: number;
  /**
   * RLIMIT_AS of the extraction process: all of its memory, buffers included. Node
   * reserves about 1.4 GiB of address space at start under this cap, so 2048 leaves the
   * document roughly 600 MiB (measured: 640 MiB of ArrayBuffers, then allocation fails).
   */
  readonly extractionAddressSpaceMb: number;
  /** V8's old-space bound of the extraction process (--max-old-space-size). */
  readonly extractionHeapMb: number;
  /** Extraction processes running at once on this node; more wait for a slot. */
  readonly maxConcurrentExtractions: number;
}

export const DEFAULT_ATTACHMENT_IMPORT_LIMITS: AttachmentImportLimits = Object.freeze({
  maxObjectBytes: MAX_ATTACHMENT_BYTES,
  maxRequestBodyBytes: 64 * 1024,
  maxNumberedNames: 99,
  maxRandomNames: 4,
  maxExtractedTextBytes: 1024 * 1024,
  maxParseInputBytes: 64 * 1024 * 1024,
  maxHtmlInputBytes: 8 * 1024 * 1024,
  maxDocxInflatedBytes: 256 * 1024 * 1024,
  maxDocxEntries: 10_000,
  maxHtmlDepth: 512,
  extractionTimeoutMs: 60_000,
  extractionCpuSeconds: 30,
  extractionAddressSpaceMb: 2048,
  extractionHeapMb: 512,
  maxConcurrentExtractions: 2,
});
