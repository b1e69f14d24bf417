import type { Logger } from "pino";
import type {
  AttachmentImportItem,
  ImportedAttachment,
} from "../../shared/contracts/attachment-import.ts";
import { domainReasonOf, WorkcellError } from "../../shared/errors/index.ts";
import type { WorkspaceFs } from "../workspace/workspace-fs.ts";
import type { AttachmentImportLimits } from "./attachment-import-limits.ts";
import type { AttachmentObjectStore } from "./attachment-object-store.ts";
import { type ExtractionKind, extractionKindOf } from "./extraction/extraction-kind.ts";
import type { TextExtractor } from "./extraction/text-extractor.ts";
import { lazyObjectSource, ObjectUnavailable } from "./lazy-object-source.ts";
import { candidateNames } from "./unique-name.ts";

/** Created inside the Workdir on first use (docs/architecture.md §3). */
export const UPLOADS_DIR = "uploads";
/** Extractions live in uploads/attachments/<name>.md; no upload may take this name. */
export const EXTRACTIONS_DIR = "attachments";

export interface AttachmentImportDeps {
  readonly objects: AttachmentObjectStore;
  readonly extractor: TextExtractor;
  readonly limits: AttachmentImportLimits;
  readonly logger: Logger;
}

/** Why a batch was refused; nothing of the batch is left in the Workdir. */
export type ImportRefusalReason =
  | "not_uploaded"
  | "size_mismatch"
  | "unsupported_type"
  | "too_large_to_parse"
  | "extraction_limit"
  | "unparseable";

export type ImportRefusal = {
  readonly ok: false;
  readonly reason: ImportRefusalReason;
  readonly fileId: string;
  readonly message: string;
};

export type ImportOutcome =
  | { readonly ok: true; readonly items: readonly ImportedAttachment[] }
  | ImportRefusal;

type Planned = {
  readonly item: AttachmentImportItem;
  readonly kind: ExtractionKind | undefined;
  readonly etag: string | undefined;
};

/**
 * Imports a batch of uploaded objects into the Workdir `fs` (docs/architecture.md §7), all or
 * nothing:
 *
 * 1. Before anything is written: every parse type is supported, and every object exists
 *    with exactly its announced size (HEAD). A batch with a missing or different object is
 *    refused having written nothing.
 * 2. Then item by item, in order: the object is streamed from S3 into `uploads/<name>` with
 *    the no-clobber write (a taken name gets a suffix, an existing file is never touched),
 *    and with `parse` its text goes to `uploads/attachments/<name>.md`. One object is in
 *    flight at a time and none is buffered, so memory stays flat whatever the batch.
 * 3. Any refusal or error removes every file this batch wrote, then is reported.
 *
 * Expected refusals are values; an unreachable store, a filesystem refusal (a symlinked
 * `uploads`, 403) or an abort throw, after the same cleanup.
 */
export async function importAttachments(
  deps: AttachmentImportDeps,
  fs: WorkspaceFs,
  items: readonly AttachmentImportItem[],
  signal: AbortSignal,
): Promise<ImportOutcome> {
  const planned: Planned[] = [];
  for (const item of items) {
    const kind = item.parse ? extractionKindOf(item.content_type, item.name) : undefined;
    if (item.parse && kind === undefined) {
      return refusal("unsupported_type", item, unsupportedMessage(item));
    }
    planned.push({ item, kind, etag: undefined });
  }
  for (const [index, plan] of planned.entries()) {
    signal.throwIfAborted();
    const head = await deps.objects.head(plan.item.object_key, signal);
    if (head === undefined) {
      return refusal("not_uploaded", plan.item, `'${plan.item.name}' was never uploaded.`);
    }
    if (head.size !== plan.item.size) {
      return refusal(
        "size_mismatch",
        plan.item,
        `'${plan.item.name}' has ${head.size} bytes, not the ${plan.item.size} announced.`,
      );
    }
    planned[index] = { ...plan, etag: head.etag };
  }
  if (planned.some((plan) => plan.kind !== undefined)) await requireExtractionDir(fs, signal);

  const written: string[] = [];
  try {
    const imported: ImportedAttachment[] = [];
    for (const plan of planned) {
      const landed = await landOne(deps, fs, plan, written, signal);
      if (!landed.ok) {
        await removeWritten(fs, written, deps.logger);
        return landed;
      }
      imported.push(landed.item);
    }
    return { ok: true, items: imported };
  } catch (error) {
    await removeWritten(fs, written, deps.logger);
    throw error;
  }
}

/**
 * One item: the first free candidate name gets the bytes, then the extraction. Every path
 * written is pushed to `written` at once, so the caller can undo it.
 */
async function landOne(
  deps: AttachmentImportDeps,
  fs: WorkspaceFs,
  plan: Planned,
  written: string[],
  signal: AbortSignal,
): Promise<{ readonly ok: true; readonly item: ImportedAttachment } | ImportRefusal> {
  const { item, kind } = plan;
  const { maxNumberedNames, maxRandomNames } = deps.limits;
  for (const name of candidateNames(item.name, maxNumberedNames, maxRandomNames)) {
    signal.throwIfAborted();
    if (name === EXTRACTIONS_DIR) continue;
    const originalPath = `${UPLOADS_DIR}/${name}`;
    const extractedPath = `${UPLOADS_DIR}/${EXTRACTIONS_DIR}/${name}.md`;
    if (kind !== undefined && (await isTaken(fs, extractedPath, signal))) continue;
    // Opened only when the write starts reading: the write checks the name first, so a
    // taken name costs no S3 request.
    const source = lazyObjectSource(() => deps.objects.open(item.object_key, plan.etag, signal));
    let size: number;
    try {
      // maxBytes = the announced size: an object that grew is cut off and refused.
      const info = await fs.writeFile(originalPath, source, {
        parents: true,
        maxBytes: item.size,
        signal,
      });
      size = info.size;
    } catch (error) {
      // Taken: before any byte was read (the usual case) or, in a race with another
      // writer, at publish time; either way the next candidate gets a fresh stream.
      if (domainReasonOf(error) === "name_exists") continue;
      if (error instanceof WorkcellError && error.code === "payload_too_large") {
        return refusal("size_mismatch", item, `'${item.name}' is larger than announced.`);
      }
      if (error instanceof ObjectUnavailable) {
        return refusal("not_uploaded", item, `'${item.name}' changed or vanished during import.`);
      }
      throw error;
    }
    written.push(originalPath);
    if (size !== item.size) {
      return refusal("size_mismatch", item, `'${item.name}' is smaller than announced.`);
    }
    if (kind === undefined) {
      return { ok: true, item: importedItem(item, name, originalPath, originalPath, false) };
    }
    const extraction = await deps.extractor.extract(fs, originalPath, kind, signal);
    if (!extraction.ok) {
      return refusal(
        REFUSAL_OF_EXTRACTION[extraction.reason],
        item,
        `'${item.name}' could not be parsed: ${extraction.message}`,
      );
    }
    const markdown = extraction.truncated
      ? `${extraction.text}\n\n[Extraction truncated: the full file is ${originalPath}]\n`
      : extraction.text;
    // No-clobber too. Only a writer racing us between the check above and now can make
    // this fail; the batch then fails (409) rather than overwrite its file.
    await fs.writeFile(extractedPath, markdown, { parents: true, signal });
    written.push(extractedPath);
    return {
      ok: true,
      item: importedItem(item, name, originalPath, extractedPath, extraction.truncated),
    };
  }
  throw new WorkcellError(
    "conflict",
    `No free name for '${item.name}' in ${UPLOADS_DIR}/: rename the file or delete old uploads.`,
    { details: { reason: "name_exists", file_id: item.file_id } },
  );
}

const REFUSAL_OF_EXTRACTION = {
  too_large: "too_large_to_parse",
  limit: "extraction_limit",
  unreadable: "unparseable",
} as const satisfies Record<string, ImportRefusalReason>;

function importedItem(
  item: AttachmentImportItem,
  name: string,
  originalPath: string,
  path: string,
  truncated: boolean,
): ImportedAttachment {
  return {
    file_id: item.file_id,
    file_name: name,
    original_path: originalPath,
    path,
    size: item.size,
    status: path === originalPath ? "uploaded" : "parsed",
    truncated,
  };
}

/**
 * A name counts as free only when it is certainly absent; anything there (a file, a
 * directory, a symlink, which stat refuses) makes it taken, so it is skipped, never
 * touched.
 */
async function isTaken(fs: WorkspaceFs, path: string, signal: AbortSignal): Promise<boolean> {
  try {
    await fs.stat(path, { signal });
    return true;
  } catch (error) {
    if (error instanceof WorkcellError && error.code === "not_found") return false;
    signal.throwIfAborted();
    return true;
  }
}

/**
 * `uploads/attachments` must be absent or a real directory before the batch starts: a
 * symlink or a file there is refused now (403 / 400), instead of making every candidate
 * name look taken.
 */
async function requireExtractionDir(fs: WorkspaceFs, signal: AbortSignal): Promise<void> {
  try {
    const info = await fs.stat(`${UPLOADS_DIR}/${EXTRACTIONS_DIR}`, { signal });
    if (info.type !== "dir") {
      throw new WorkcellError(
        "conflict",
        `${UPLOADS_DIR}/${EXTRACTIONS_DIR} is a file: extractions need it to be a directory; rename it.`,
        { details: { reason: "name_exists", path: `${UPLOADS_DIR}/${EXTRACTIONS_DIR}` } },
      );
    }
  } catch (error) {
    if (error instanceof WorkcellError && error.code === "not_found") return;
    throw error;
  }
}

/**
 * Removes what a failed batch wrote, newest first. Not bound to the request's signal: a
 * batch that failed because the caller went away must still be undone. A file that cannot
 * be removed is logged (it was ours, so only a concurrent delete or rename explains it).
 */
async function removeWritten(fs: WorkspaceFs, written: string[], logger: Logger): Promise<void> {
  for (const path of written.reverse()) {
    try {
      await fs.remove(path);
    } catch (error) {
      if (error instanceof WorkcellError && error.code === "not_found") continue;
      logger.warn({ err: error, path }, "could not remove a file of a failed attachment import");
    }
  }
  written.length = 0;
}

function refusal(
  reason: ImportRefusalReason,
  item: AttachmentImportItem,
  message: string,
): ImportRefusal {
  return { ok: false, reason, fileId: item.file_id, message };
}

function unsupportedMessage(item: AttachmentImportItem): string {
  return `'${item.name}' (${item.content_type}) cannot be parsed: text, Markdown, CSV, JSON, HTML, PDF and DOCX can; confirm it without parse.`;
}
