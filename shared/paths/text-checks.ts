// C0 controls, DEL and C1 controls: invisible in listings and logs, and some terminals
// act on them, so a name containing one is never what the user meant.
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point
const CONTROL_CHARACTER = /[\u0000-\u001f\u007f-\u009f]/;

const utf8 = new TextEncoder();

export function hasControlCharacter(text: string): boolean {
  return CONTROL_CHARACTER.test(text);
}

/** Bytes of `text` in UTF-8: what the filesystem limits count (NAME_MAX, PATH_MAX). */
export function utf8ByteLength(text: string): number {
  return utf8.encode(text).length;
}
