import { ExtractionLimitError } from "./extraction-limit-error.ts";

/** Elements that never have content, so they never nest. */
const VOID_ELEMENTS = new Set([
  "area",
  "base",
  "br",
  "col",
  "embed",
  "hr",
  "img",
  "input",
  "link",
  "meta",
  "param",
  "source",
  "track",
  "wbr",
]);

/**
 * Elements whose end tag is optional: a page of a thousand unclosed `<p>` or `<li>` is
 * flat, not a thousand deep, and the parser closes them implicitly. Not counted, so
 * sloppy but ordinary HTML is never refused.
 */
const OPTIONAL_END_ELEMENTS = new Set([
  "html",
  "head",
  "body",
  "p",
  "li",
  "dt",
  "dd",
  "option",
  "optgroup",
  "tr",
  "td",
  "th",
  "thead",
  "tbody",
  "tfoot",
  "colgroup",
  "caption",
  "rb",
  "rt",
  "rtc",
  "rp",
]);

/** Their content is text up to their own end tag: tags inside are not tags. */
const RAW_TEXT_ELEMENTS = new Set(["script", "style", "textarea", "title", "xmp", "noscript"]);

const TAG = /<!--[\s\S]*?(?:-->|$)|<(\/?)([a-zA-Z][a-zA-Z0-9:-]*)\b[^>]*?(\/?)>/g;

/**
 * Refuses HTML nested deeper than `maxDepth` before any DOM is built. Why before: domino,
 * the DOM turndown parses into, takes time quadratic in the nesting depth (20 000 nested
 * `<div>` cost 9 s here) and turndown then recurses once per level, so a 2 MB page of
 * nested tags is a CPU bomb that only the CPU cap would stop. Chromium's parser stops
 * nesting at 512 for the same reason; a lexical count is enough to bound the work, and
 * the count over-approximates nothing an ordinary page contains (see the sets above).
 */
export function checkHtmlDepth(html: string, maxDepth: number): void {
  let depth = 0;
  let lower: string | undefined;
  TAG.lastIndex = 0;
  for (let match = TAG.exec(html); match !== null; match = TAG.exec(html)) {
    const [, closing, rawName, selfClosing] = match;
    if (rawName === undefined) continue; // a comment
    const name = rawName.toLowerCase();
    if (VOID_ELEMENTS.has(name) || OPTIONAL_END_ELEMENTS.has(name)) continue;
    if (closing === "/") {
      if (depth > 0) depth--;
      continue;
    }
    if (selfClosing === "/") continue;
    if (RAW_TEXT_ELEMENTS.has(name)) {
      lower ??= html.toLowerCase();
      const end = lower.indexOf(`</${name}`, TAG.lastIndex);
      TAG.lastIndex = end === -1 ? html.length : end;
      continue;
    }
    depth++;
    if (depth > maxDepth) {
      throw new ExtractionLimitError(`the HTML is nested deeper than ${maxDepth} elements`);
    }
  }
}
