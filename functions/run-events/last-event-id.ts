import { WorkcellError } from "../../shared/errors/workcell-error.ts";

export const LAST_EVENT_ID_HEADER = "Last-Event-ID";
/** Sequences are Postgres integers. */
const MAX_SEQ = 2_147_483_647;

/** The sequence to resume after: 0 (from the start) when the header is absent or empty. */
export function parseLastEventId(header: string | undefined): number {
  const value = header?.trim() ?? "";
  if (value === "") return 0;
  const seq = /^\d{1,10}$/.test(value) ? Number(value) : Number.NaN;
  if (!Number.isSafeInteger(seq) || seq > MAX_SEQ) {
    throw new WorkcellError(
      "invalid_request",
      "Last-Event-ID must be the id of an event of this stream (a non-negative integer).",
      { details: { field: LAST_EVENT_ID_HEADER } },
    );
  }
  return seq;
}
