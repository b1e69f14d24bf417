/** Extracted text and whether it was cut at the output bound. */
export interface ExtractedText {
  readonly text: string;
  readonly truncated: boolean;
}

export interface BoundedText {
  /** Adds text; false once the bound is reached (the caller stops producing). */
  append(text: string): boolean;
  readonly full: boolean;
  result(): ExtractedText;
}

/**
 * Collects text up to `maxBytes` of UTF-8, cutting at a character boundary, so an
 * extraction's output is bounded however large or repetitive the document is.
 */
export function boundedText(maxBytes: number): BoundedText {
  const encoder = new TextEncoder();
  const parts: string[] = [];
  let used = 0;
  let truncated = false;
  return {
    append(text) {
      if (truncated) return false;
      const bytes = encoder.encode(text);
      if (used + bytes.byteLength <= maxBytes) {
        parts.push(text);
        used += bytes.byteLength;
        return true;
      }
      parts.push(utf8Prefix(bytes, maxBytes - used));
      used = maxBytes;
      truncated = true;
      return false;
    },
    get full() {
      return truncated;
    },
    result() {
      return { text: parts.join(""), truncated };
    },
  };
}

/** The longest prefix of `bytes` of at most `limit` bytes that ends on a character boundary. */
export function utf8Prefix(bytes: Uint8Array, limit: number): string {
  let end = Math.min(limit, bytes.byteLength);
  // Back off over continuation bytes (10xxxxxx) so no character is split.
  while (end > 0 && end < bytes.byteLength && ((bytes[end] ?? 0) & 0xc0) === 0x80) end--;
  return new TextDecoder().decode(bytes.subarray(0, end));
}

/**
 * Decodes bytes that were cut at an arbitrary offset: an incomplete character at the end
 * is dropped instead of becoming U+FFFD. Invalid sequences elsewhere still become U+FFFD.
 */
export function decodeCutUtf8(bytes: Uint8Array): string {
  let lead = bytes.byteLength - 1;
  let continuation = 0;
  while (lead >= 0 && continuation < 3 && ((bytes[lead] ?? 0) & 0xc0) === 0x80) {
    lead--;
    continuation++;
  }
  let end = bytes.byteLength;
  if (lead >= 0) {
    const first = bytes[lead] ?? 0;
    const length = first >= 0xf0 ? 4 : first >= 0xe0 ? 3 : first >= 0xc0 ? 2 : 1;
    if (length > continuation + 1) end = lead;
  }
  return new TextDecoder().decode(bytes.subarray(0, end));
}
