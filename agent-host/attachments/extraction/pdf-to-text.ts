import { getDocumentProxy } from "unpdf";
import type { BoundedText } from "./bounded-text.ts";

/**
 * PDF → plain text, page by page, with unpdf (Mozilla's PDF.js, serverless build: no
 * `eval`, no worker of its own, no canvas). Stops as soon as the output bound is reached,
 * so a huge document costs only the pages that fit.
 *
 * Security: this PDF.js (6.x) no longer compiles font or PostScript programs with `eval` /
 * `new Function` (the path CVE-2024-4367 used to run attacker code is gone; PostScript
 * functions become closures or WebAssembly); font faces and system fonts are never
 * loaded, as text extraction needs neither. It runs in the extraction worker anyway.
 */
export async function pdfToText(bytes: Uint8Array, out: BoundedText): Promise<void> {
  const pdf = await getDocumentProxy(bytes, {
    disableFontFace: true,
    useSystemFonts: false,
    stopAtErrors: false,
    verbosity: 0,
  });
  try {
    for (let pageNumber = 1; pageNumber <= pdf.numPages && !out.full; pageNumber++) {
      const page = await pdf.getPage(pageNumber);
      const content = await page.getTextContent();
      let text = pageNumber > 1 ? "\n\n" : "";
      for (const item of content.items) {
        if (!("str" in item)) continue;
        text += item.str;
        if (item.hasEOL) text += "\n";
      }
      out.append(text);
      page.cleanup();
    }
  } finally {
    await pdf.loadingTask.destroy();
  }
}
