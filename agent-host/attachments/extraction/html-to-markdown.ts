import TurndownService from "turndown";

export interface HtmlToMarkdownOptions {
  /** Drop images (DOCX: their bytes are not ours to inline, and a data: URI is noise). */
  readonly dropImages?: boolean;
}

/**
 * Elements whose content is never text for a reader: scripts and styles, embedded
 * documents, templates and metadata. Removed with their content, not converted.
 */
const NON_TEXT_ELEMENTS = [
  "script",
  "style",
  "noscript",
  "iframe",
  "object",
  "embed",
  "template",
  "head",
  "title",
  "meta",
  "link",
  "svg",
  "canvas",
] as TurndownService.TagName[];

/**
 * HTML → Markdown with turndown (parsing by its bundled DOM, domino: pure JavaScript, no
 * script execution, no network). Runs in the extraction worker, whose heap is bounded.
 */
export function htmlToMarkdown(html: string, options: HtmlToMarkdownOptions = {}): string {
  const service = new TurndownService({
    headingStyle: "atx",
    codeBlockStyle: "fenced",
    bulletListMarker: "-",
  });
  service.remove(NON_TEXT_ELEMENTS);
  if (options.dropImages) service.remove(["img"] as TurndownService.TagName[]);
  return service.turndown(html);
}
