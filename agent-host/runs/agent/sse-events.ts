/** One Server-Sent Event (only the fields Chat Completions uses). */
export interface SseEvent {
  /** The `event:` field; "message" when absent, as in the EventSource spec. */
  readonly event: string;
  /** `data:` lines joined with "\n". */
  readonly data: string;
}

/**
 * Longest event we buffer. A stream chunk of Chat Completions is a few hundred bytes; a
 * server that never sends a line break must not make us buffer without bound.
 */
export const MAX_SSE_EVENT_CHARS = 8 * 1024 * 1024;

export class SseTooLargeError extends Error {
  override readonly name = "SseTooLargeError";
}

/**
 * Parses a `text/event-stream` body (WHATWG HTML §9.2 "event stream interpretation"):
 * lines end with CRLF, LF or CR, even across chunk boundaries; `:` lines are comments;
 * a blank line dispatches. Lenient in one way: data pending when the body ends is still
 * dispatched, since some servers omit the last blank line. `onBytes` is called for every
 * chunk received (comments and keep-alives included), for idle timeouts.
 */
export async function* readSseEvents(
  body: ReadableStream<Uint8Array>,
  onBytes: () => void = () => {},
): AsyncGenerator<SseEvent> {
  const decoder = new TextDecoder("utf-8");
  let buffer = "";
  let event = "";
  let data: string[] = [];
  let dataChars = 0;

  function* takeLines(final: boolean): Generator<SseEvent> {
    const lineBreak = /\r\n|\r|\n/g;
    let start = 0;
    for (;;) {
      lineBreak.lastIndex = start;
      const found = lineBreak.exec(buffer);
      if (found === null) break;
      // A CR at the very end may be the first half of a CRLF still in flight.
      if (found[0] === "\r" && found.index === buffer.length - 1 && !final) break;
      const line = buffer.slice(start, found.index);
      start = found.index + found[0].length;
      if (line === "") {
        if (data.length > 0)
          yield { event: event === "" ? "message" : event, data: data.join("\n") };
        event = "";
        data = [];
        dataChars = 0;
        continue;
      }
      if (line.startsWith(":")) continue;
      const colon = line.indexOf(":");
      const field = colon < 0 ? line : line.slice(0, colon);
      let value = colon < 0 ? "" : line.slice(colon + 1);
      if (value.startsWith(" ")) value = value.slice(1);
      if (field === "data") {
        data.push(value);
        dataChars += value.length;
      } else if (field === "event") {
        event = value;
      }
      // id and retry matter to EventSource reconnection only; a model stream is not resumed.
    }
    buffer = buffer.slice(start);
    if (buffer.length + dataChars > MAX_SSE_EVENT_CHARS) {
      throw new SseTooLargeError(
        `an event of the stream exceeds ${MAX_SSE_EVENT_CHARS} characters`,
      );
    }
  }

  for await (const chunk of body) {
    onBytes();
    buffer += decoder.decode(chunk, { stream: true });
    yield* takeLines(false);
  }
  buffer += decoder.decode();
  yield* takeLines(true);
  if (buffer !== "") {
    buffer += "\n";
    yield* takeLines(true);
  }
  if (data.length > 0) yield { event: event === "" ? "message" : event, data: data.join("\n") };
}
