import { utf8ByteLength } from "../../shared/paths/text-checks.ts";

/** Bytes a name may have and still take the `.md` of its extraction (NAME_MAX 255 − 3). */
export const MAX_IMPORTED_NAME_BYTES = 252;

/**
 * Names to try for an upload, best first: the name itself, then `report (1).pdf` …
 * `report (<numbered>).pdf`, then `report (<8 random hex>).pdf` `random` times. The
 * suffix goes before the extension so the file keeps its type. Every candidate fits
 * MAX_IMPORTED_NAME_BYTES (the stem is shortened, never the suffix or the extension).
 */
export function* candidateNames(name: string, numbered: number, random: number): Generator<string> {
  const { stem, extension } = splitExtension(name);
  yield withinNameLimit(stem, "", extension);
  for (let n = 1; n <= numbered; n++) yield withinNameLimit(stem, ` (${n})`, extension);
  for (let n = 0; n < random; n++) {
    const hex = crypto.getRandomValues(new Uint8Array(4));
    yield withinNameLimit(stem, ` (${Buffer.from(hex).toString("hex")})`, extension);
  }
}

/** `report.pdf` → `report` + `.pdf`; a name whose only dot leads (`.env`) has no extension. */
function splitExtension(name: string): { stem: string; extension: string } {
  const dot = name.lastIndexOf(".");
  // An "extension" longer than this is more likely part of the name (`notes.from the meeting`).
  const maxExtensionChars = 16;
  if (dot <= 0 || name.length - dot > maxExtensionChars) return { stem: name, extension: "" };
  return { stem: name.slice(0, dot), extension: name.slice(dot) };
}

function withinNameLimit(stem: string, suffix: string, extension: string): string {
  const room = MAX_IMPORTED_NAME_BYTES - utf8ByteLength(suffix) - utf8ByteLength(extension);
  let kept = stem;
  while (utf8ByteLength(kept) > room) kept = Array.from(kept).slice(0, -1).join("");
  return `${kept}${suffix}${extension}`;
}
