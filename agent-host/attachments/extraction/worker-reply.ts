/** The one message the extraction worker posts back. */
export type WorkerReply =
  | { readonly ok: true; readonly text: string; readonly truncated: boolean }
  | { readonly ok: false; readonly message: string };
