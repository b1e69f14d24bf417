import type { WorkspaceQuota } from "../../shared/capability/capability-claims.ts";
import type {
  AttachmentImportItem,
  ImportedAttachment,
} from "../../shared/contracts/attachment-import.ts";
import type { WorkcellError } from "../../shared/errors/workcell-error.ts";
import type { RequestOrigin } from "../data-plane/request-origin.ts";

/** Whose Workdir: the capability is minted for exactly this uid and Workdir. */
export type ImportTarget = {
  readonly uid: string;
  readonly workdirPath: string;
  /** The uid's UserWorkspace quota, carried by the import capability. */
  readonly quota?: WorkspaceQuota;
  /** The API request the call is made for (its id and trace travel along). */
  readonly origin?: RequestOrigin;
};

/**
 * `ok`: every file landed. Otherwise the data plane refused the batch (not uploaded, size
 * differs, unsupported or unparseable type, a symlinked `uploads/`…) and wrote nothing:
 * `error` is what the client gets.
 */
export type ImportResult =
  | { readonly ok: true; readonly items: readonly ImportedAttachment[] }
  | { readonly ok: false; readonly error: WorkcellError };

/**
 * The seam to the data plane for attachments: functions/ decides, the agent-host touches
 * the bytes (docs/architecture.md §1). A data plane that cannot be reached throws `unavailable`.
 */
export interface AttachmentImporter {
  importFiles(
    target: ImportTarget,
    items: readonly AttachmentImportItem[],
    signal: AbortSignal,
  ): Promise<ImportResult>;
  /**
   * Removes Workdir files (Workdir-relative paths); a file already gone counts as removed.
   * Returns the paths that could not be removed, for the caller to log.
   */
  removeFiles(
    target: ImportTarget,
    paths: readonly string[],
    signal: AbortSignal,
  ): Promise<readonly string[]>;
}
