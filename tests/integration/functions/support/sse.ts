export type SseFrame = {
  id?: string;
  event?: string;
  data?: string;
  retry?: string;
  comment?: string;
};

/**
 * Reads an SSE body frame by frame, as EventSource would (fields per line, frames
 * separated by a blank line). Stops at the end of the stream or after `until` is true.
 */
export async function readSse(
  body: ReadableStream<Uint8Array>,
  until: (frames: SseFrame[]) => boolean = () => false,
): Promise<{ frames: SseFrame[]; ended: boolean }> {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  const frames: SseFrame[] = [];
  let buffer = "";
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return { frames, ended: true };
    buffer += value;
    let boundary = buffer.indexOf("\n\n");
    while (boundary !== -1) {
      frames.push(parseFrame(buffer.slice(0, boundary)));
      buffer = buffer.slice(boundary + 2);
      boundary = buffer.indexOf("\n\n");
    }
    if (until(frames)) {
      await reader.cancel();
      return { frames, ended: false };
    }
  }
}

/**
 * The frames of an SSE body one at a time, as they arrive: for tests that act between
 * frames (e.g. let a command go on only once its output was delivered).
 */
export async function* sseFrames(body: ReadableStream<Uint8Array>): AsyncGenerator<SseFrame> {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      buffer += value;
      let boundary = buffer.indexOf("\n\n");
      while (boundary !== -1) {
        yield parseFrame(buffer.slice(0, boundary));
        buffer = buffer.slice(boundary + 2);
        boundary = buffer.indexOf("\n\n");
      }
    }
  } finally {
    await reader.cancel().catch(() => {});
  }
}

function parseFrame(text: string): SseFrame {
  const frame: SseFrame = {};
  for (const line of text.split("\n")) {
    if (line.startsWith(":")) frame.comment = line.slice(1).trim();
    const match = /^(id|event|data|retry): ?(.*)$/.exec(line);
    if (match) frame[match[1] as "id" | "event" | "data" | "retry"] = match[2];
  }
  return frame;
}

/** The event frames only (no retry / comment frames). */
export function eventFrames(frames: SseFrame[]): SseFrame[] {
  return frames.filter((f) => f.event !== undefined);
}
