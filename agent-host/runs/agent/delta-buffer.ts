export interface DeltaBuffer {
  /** Adds streamed text; emits the batch when it is large or old enough. */
  push(text: string): Promise<void>;
  /** Emits whatever is pending. */
  flush(): Promise<void>;
}

/**
 * Batches streamed text into fewer `message.delta` events. A model streams a token at a
 * time and the worker persists each event as a row, so without batching a long reply is
 * thousands of inserts. A batch goes out once it has `flushChars` characters or its first
 * piece is `flushMs` old (checked when the next piece arrives, so no timer is needed), and
 * at the end of the turn.
 */
export function createDeltaBuffer(p: {
  readonly emitText: (text: string) => Promise<void>;
  readonly flushChars: number;
  readonly flushMs: number;
  readonly nowMs?: () => number;
}): DeltaBuffer {
  const nowMs = p.nowMs ?? (() => performance.now());
  let pending = "";
  let firstAtMs = 0;
  const flush = async (): Promise<void> => {
    if (pending === "") return;
    const text = pending;
    pending = "";
    await p.emitText(text);
  };
  return {
    async push(text) {
      if (text === "") return;
      if (pending === "") firstAtMs = nowMs();
      pending += text;
      if (pending.length >= p.flushChars || nowMs() - firstAtMs >= p.flushMs) await flush();
    },
    flush,
  };
}
