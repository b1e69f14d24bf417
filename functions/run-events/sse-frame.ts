import type { RunEvent } from "../../shared/db/schema.ts";
import { isoTime } from "../db/iso-time.ts";

/**
 * One SSE frame of a run event (shared/contracts/run-event.ts): `id` is the sequence
 * (so Last-Event-ID resumes after it), `event` the type, `data` the whole event as one
 * line of JSON (JSON.stringify escapes newlines, so no frame can be split or forged).
 */
export function runEventFrame(row: RunEvent): string {
  const event = {
    seq: row.seq,
    run_id: row.runId,
    type: row.type,
    data: row.data,
    created_at: isoTime(row.createdAt),
  };
  return `id: ${row.seq}\nevent: ${sseToken(row.type)}\ndata: ${JSON.stringify(event)}\n\n`;
}

/** A comment line: ignored by EventSource, keeps proxies from closing an idle stream. */
export const KEEP_ALIVE_FRAME = ": keep-alive\n\n";

/** Tells EventSource how long to wait before reconnecting after the stream ends. */
export function retryFrame(ms: number): string {
  return `retry: ${Math.trunc(ms)}\n\n`;
}

// Event types are written by our worker, but a line break in one would end the field.
function sseToken(value: string): string {
  return value.replace(/[\r\n]/g, " ");
}
