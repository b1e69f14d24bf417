import { utf8ByteLength } from "../../shared/paths/text-checks.ts";

/** The name of an upload whose name sanitizes to nothing (`..`, `///`, ` . `). */
export const FALLBACK_ATTACHMENT_NAME = "attachment";
/**
 * Longest sanitized name, in UTF-8 bytes. Below NAME_MAX (255) on purpose: the data plane
 * may add a ` (12)` suffix, and the extraction adds `.md`, and both must still fit.
 */
export const MAX_ATTACHMENT_NAME_BYTES = 200;
/** Longest extension kept whole when a long name is shortened. */
const MAX_KEPT_EXTENSION_CHARS = 16;

// C0/C1 controls and DEL (invisible, and some terminals act on them), plus the
// bidirectional overrides and isolates (U+202A–202E, U+2066–2069) and the directional
// marks: `invoice\u202Efdp.exe` would display as `invoiceexe.pdf`, a classic spoof.
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point
const UNSAFE_CHARACTERS = /[\u0000-\u001f\u007f-\u009f\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

/**
 * Turns a client's file name into one Workdir entry name (docs/api.md "Attachments"):
 * * basename only: the part after the last `/` or `\` (a browser or CLI may send a whole
 *   client path, and `../../etc/passwd` becomes `passwd`), so no name can point anywhere
 *   but `uploads/`;
 * * control and bidi-override characters replaced with `_`; lone surrogates made
 *   well-formed; NFC, so one visible name has one spelling;
 * * leading and trailing dots and spaces stripped (no hidden files, no `.`/`..`, nothing
 *   Windows would silently change);
 * * at most MAX_ATTACHMENT_NAME_BYTES, shortening the stem and keeping the extension;
 * * `attachment` when nothing is left.
 * The data plane checks the result again (attachmentFileNameProblem) before writing.
 */
export function sanitizeAttachmentName(raw: string): string {
  const base = raw.split(/[/\\]/).findLast((part) => trimDotsAndSpaces(part) !== "") ?? "";
  const cleaned = trimDotsAndSpaces(
    base.toWellFormed().normalize("NFC").replace(UNSAFE_CHARACTERS, "_"),
  );
  const fitted = trimDotsAndSpaces(shorten(cleaned, MAX_ATTACHMENT_NAME_BYTES));
  return fitted === "" ? FALLBACK_ATTACHMENT_NAME : fitted;
}

function trimDotsAndSpaces(name: string): string {
  return name.replace(/^[.\s]+|[.\s]+$/gu, "");
}

/** At most `maxBytes` of UTF-8, cut between characters, keeping a short extension. */
function shorten(name: string, maxBytes: number): string {
  if (utf8ByteLength(name) <= maxBytes) return name;
  const dot = name.lastIndexOf(".");
  const extension = dot > 0 && name.length - dot <= MAX_KEPT_EXTENSION_CHARS ? name.slice(dot) : "";
  const stem = Array.from(extension === "" ? name : name.slice(0, dot));
  const room = maxBytes - utf8ByteLength(extension);
  let bytes = 0;
  let kept = 0;
  for (const ch of stem) {
    const size = utf8ByteLength(ch);
    if (bytes + size > room) break;
    bytes += size;
    kept++;
  }
  return stem.slice(0, kept).join("") + extension;
}
