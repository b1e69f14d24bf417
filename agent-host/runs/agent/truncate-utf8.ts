export interface Truncated {
  readonly text: string;
  /** Bytes of the original that were dropped; 0 when it fit. */
  readonly droppedBytes: number;
}

/**
 * The longest prefix of `text` whose UTF-8 encoding fits in `maxBytes`, cut on a
 * character boundary (never half a multi-byte sequence, never half a surrogate pair).
 */
export function truncateUtf8(text: string, maxBytes: number): Truncated {
  const bytes = Buffer.from(text, "utf8");
  if (bytes.byteLength <= maxBytes) return { text, droppedBytes: 0 };
  const end = prefixEnd(bytes, maxBytes);
  return { text: bytes.subarray(0, end).toString("utf8"), droppedBytes: bytes.byteLength - end };
}

/**
 * Caps a tool result for the model: the head and the tail, with a note in between. The
 * tail is kept because that is where tools put what the model must not miss (the exit
 * code and stderr of a command, the "file is N bytes" note of read_file).
 */
export function capToolOutput(text: string, maxBytes: number): string {
  const bytes = Buffer.from(text, "utf8");
  if (bytes.byteLength <= maxBytes) return text;
  const headEnd = prefixEnd(bytes, maxBytes - Math.floor(maxBytes / 4));
  const tailStart = suffixStart(bytes, Math.floor(maxBytes / 4));
  const omitted = tailStart - headEnd;
  return (
    `${bytes.subarray(0, headEnd).toString("utf8")}\n` +
    `[output truncated: ${omitted} bytes omitted here; narrow the command or read the file in parts]\n` +
    bytes.subarray(tailStart).toString("utf8")
  );
}

/** Largest end ≤ maxBytes that is a character boundary. */
function prefixEnd(bytes: Buffer, maxBytes: number): number {
  let end = Math.max(0, Math.min(maxBytes, bytes.byteLength));
  // Step back over continuation bytes (10xxxxxx) to the start of the cut character.
  while (end > 0 && end < bytes.byteLength && ((bytes[end] as number) & 0xc0) === 0x80) end--;
  return end;
}

/** Smallest start ≥ length - maxBytes that is a character boundary. */
function suffixStart(bytes: Buffer, maxBytes: number): number {
  let start = Math.max(0, bytes.byteLength - maxBytes);
  while (start < bytes.byteLength && ((bytes[start] as number) & 0xc0) === 0x80) start++;
  return start;
}
