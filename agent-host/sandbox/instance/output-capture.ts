import type { CapturedOutput } from "../driver.ts";

/**
 * Keeps the first `maxBytes` of one output stream and counts the rest. Excess is
 * dropped, not buffered: a process that prints gigabytes must not grow agent-host's
 * heap, and it must keep being drained, or it would block on a full pipe and look hung.
 */
export class OutputCapture {
  readonly #maxBytes: number;
  readonly #onChunk: ((chunk: Buffer) => void) | undefined;
  readonly #kept: Buffer[] = [];
  #keptBytes = 0;
  #totalBytes = 0;

  constructor(maxBytes: number, onChunk?: (chunk: Buffer) => void) {
    this.#maxBytes = maxBytes;
    this.#onChunk = onChunk;
  }

  push(chunk: Buffer): void {
    this.#totalBytes += chunk.length;
    const room = this.#maxBytes - this.#keptBytes;
    if (room <= 0) return;
    const kept = chunk.length <= room ? chunk : chunk.subarray(0, room);
    this.#kept.push(kept);
    this.#keptBytes += kept.length;
    this.#onChunk?.(kept);
  }

  result(): CapturedOutput {
    return {
      bytes: Buffer.concat(this.#kept, this.#keptBytes),
      totalBytes: this.#totalBytes,
      droppedBytes: this.#totalBytes - this.#keptBytes,
    };
  }
}
