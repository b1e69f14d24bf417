import { domainError, WorkcellError } from "../../shared/errors/index.ts";
import type { ImportRefusal } from "./import-attachments.ts";

/**
 * The HTTP error of a refused import: 400 (422 for `extraction_limit`), nothing written. `details.file_id` names
 * the item; `details.reason` says why, for clients that switch on it.
 */
export function importRefusalError(refusal: ImportRefusal): WorkcellError {
  const details = { file_id: refusal.fileId };
  switch (refusal.reason) {
    case "not_uploaded":
    case "size_mismatch":
      return domainError("attachment_not_uploaded", {
        message: `${refusal.message} Upload the file again, then confirm.`,
        details: { ...details, problem: refusal.reason },
      });
    case "unsupported_type":
      return new WorkcellError("invalid_request", refusal.message, {
        details: { ...details, reason: "attachment_type_not_parseable" },
      });
    case "too_large_to_parse":
      return new WorkcellError("invalid_request", refusal.message, {
        details: { ...details, reason: "attachment_too_large_to_parse" },
      });
    case "extraction_limit":
      return domainError("extraction_limit", {
        message: `${refusal.message}. Confirm it without parse, or attach a simpler document.`,
        details,
      });
    case "unparseable":
      return new WorkcellError("invalid_request", `${refusal.message}; confirm it without parse.`, {
        details: { ...details, reason: "attachment_unparseable" },
      });
  }
}
