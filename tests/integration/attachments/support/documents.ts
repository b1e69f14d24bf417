// Small, valid documents of each parsed type, built byte by byte so the tests need no
// office suite or PDF writer: a one-page PDF with a standard font, a DOCX (a zip of three
// XML parts, via the skills tests' hand-made zip writer) and an HTML page.
import { constants, crc32, deflateRawSync } from "node:zlib";
import { buildZip } from "../../skills/archive-builder.ts";

/** A PDF with one page showing `lines`, one under the other (ASCII only). */
export function pdfWithLines(lines: readonly string[]): Buffer {
  const pdfString = (text: string) => text.replace(/[\\()]/g, (ch) => `\\${ch}`);
  const text = lines
    .map((line, i) => `${i === 0 ? "" : "0 -30 Td "}(${pdfString(line)}) Tj`)
    .join(" ");
  const content = `BT /F1 18 Tf 72 720 Td ${text} ET`;
  const objects = [
    "<< /Type /Catalog /Pages 2 0 R >>",
    "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
    "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>",
    `<< /Length ${Buffer.byteLength(content)} >>\nstream\n${content}\nendstream`,
    "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
  ];
  let body = "%PDF-1.4\n";
  const offsets: number[] = [];
  for (const [i, object] of objects.entries()) {
    offsets.push(Buffer.byteLength(body));
    body += `${i + 1} 0 obj\n${object}\nendobj\n`;
  }
  const xref = Buffer.byteLength(body);
  body += `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n`;
  for (const offset of offsets) body += `${String(offset).padStart(10, "0")} 00000 n \n`;
  body += `trailer\n<< /Size ${objects.length + 1} /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`;
  return Buffer.from(body, "latin1");
}

/** A DOCX whose body is a heading and paragraphs. */
export function docxWith(heading: string, paragraphs: readonly string[]): Buffer {
  const xmlText = (text: string) =>
    text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
  const paragraph = (text: string, style?: string) =>
    `<w:p>${style ? `<w:pPr><w:pStyle w:val="${style}"/></w:pPr>` : ""}<w:r><w:t xml:space="preserve">${xmlText(text)}</w:t></w:r></w:p>`;
  const document = `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>${paragraph(heading, "Heading1")}${paragraphs.map((p) => paragraph(p)).join("")}</w:body></w:document>`;
  return buildZip([
    {
      name: "[Content_Types].xml",
      data: `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>`,
    },
    {
      name: "_rels/.rels",
      data: `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/></Relationships>`,
    },
    { name: "word/document.xml", data: document },
  ]);
}

export const DOCX_TYPE = "application/vnd.openxmlformats-officedocument.wordprocessingml.document";

const ZERO_BLOCK_BYTES = 1024 * 1024;

/**
 * Deflate data that inflates to `bytes` zero bytes (a multiple of 1 MiB), built in
 * milliseconds: one MiB of zeros is deflated once with a full flush (byte-aligned, no
 * back-reference across it), and that block is repeated, then ended by an empty final
 * block. `zlib` wraps it in the zlib header and Adler-32 (of n zeros: a = 1, b = n mod
 * 65521) that a PDF FlateDecode stream carries; `raw` is a zip entry's deflate.
 */
export function deflatedZerosFast(bytes: number, format: "zlib" | "raw"): Buffer {
  const block = deflateRawSync(Buffer.alloc(ZERO_BLOCK_BYTES), {
    level: constants.Z_BEST_COMPRESSION,
    finishFlush: constants.Z_FULL_FLUSH,
  });
  const count = Math.ceil(bytes / ZERO_BLOCK_BYTES);
  const body = Buffer.concat([...Array.from({ length: count }, () => block), EMPTY_FINAL_BLOCK]);
  if (format === "raw") return body;
  const adler = Buffer.alloc(4);
  adler.writeUInt32BE(((count * ZERO_BLOCK_BYTES) % 65521) * 65536 + 1);
  return Buffer.concat([Buffer.from([0x78, 0xda]), body, adler]);
}

/** A zip entry (archive-builder's `raw`) of `bytes` zeros, with its real size and CRC-32. */
export function zipEntryOfZeros(bytes: number): { deflated: Buffer; size: number; crc: number } {
  const zeros = Buffer.alloc(ZERO_BLOCK_BYTES);
  const count = Math.ceil(bytes / ZERO_BLOCK_BYTES);
  let crc = 0;
  for (let i = 0; i < count; i++) crc = crc32(zeros, crc);
  return { deflated: deflatedZerosFast(bytes, "raw"), size: count * ZERO_BLOCK_BYTES, crc };
}

/** An empty final block with fixed Huffman codes (BFINAL=1, BTYPE=01, end-of-block). */
const EMPTY_FINAL_BLOCK = Buffer.from([0x03, 0x00]);

/** A one-page PDF whose content stream is `deflated` (a FlateDecode zlib stream). */
export function pdfWithFlateContent(deflated: Buffer): Buffer {
  const head = [
    "<< /Type /Catalog /Pages 2 0 R >>",
    "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
    "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R >>",
  ];
  const parts: Buffer[] = [Buffer.from("%PDF-1.4\n", "latin1")];
  const offsets: number[] = [];
  let length = parts[0]?.byteLength ?? 0;
  const push = (part: Buffer): void => {
    parts.push(part);
    length += part.byteLength;
  };
  for (const [i, object] of head.entries()) {
    offsets.push(length);
    push(Buffer.from(`${i + 1} 0 obj\n${object}\nendobj\n`, "latin1"));
  }
  offsets.push(length);
  push(Buffer.from(`4 0 obj\n<< /Length ${deflated.byteLength} /Filter /FlateDecode >>\nstream\n`));
  push(deflated);
  push(Buffer.from("\nendstream\nendobj\n", "latin1"));
  const xref = length;
  let tail = `xref\n0 ${offsets.length + 1}\n0000000000 65535 f \n`;
  for (const offset of offsets) tail += `${String(offset).padStart(10, "0")} 00000 n \n`;
  tail += `trailer\n<< /Size ${offsets.length + 1} /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`;
  push(Buffer.from(tail, "latin1"));
  return Buffer.concat(parts);
}
