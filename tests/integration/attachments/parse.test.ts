import { readFileSync } from "node:fs";
import { join } from "node:path";
import { eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { Attachment } from "../../../shared/contracts/attachment.ts";
import { attachments } from "../../../shared/db/schema.ts";
import { buildZip, deflatedZeros } from "../skills/archive-builder.ts";
import { type AttachmentsHarness, startAttachmentsHarness } from "./support/attachments-harness.ts";
import { DOCX_TYPE, docxWith, pdfWithLines } from "./support/documents.ts";

/** Small bounds so truncation and the zip-bomb guard are reached with small files. */
const MAX_TEXT_BYTES = 64 * 1024;
const MAX_DOCX_INFLATED_BYTES = 4 * 1024 * 1024;

let h: AttachmentsHarness;

beforeAll(async () => {
  h = await startAttachmentsHarness({
    importLimits: {
      maxExtractedTextBytes: MAX_TEXT_BYTES,
      maxDocxInflatedBytes: MAX_DOCX_INFLATED_BYTES,
    },
  });
});
afterAll(async () => {
  await h?.close();
});

type ErrorJson = { error: { code: string; details?: Record<string, unknown> } };

async function confirmOne(
  name: string,
  contentType: string,
  bytes: Uint8Array | string,
  parse = true,
) {
  const thread = await h.createThread();
  const group = await h.requestUploads([
    { name, size: Buffer.byteLength(bytes), content_type: contentType },
  ]);
  const item = group.items[0];
  if (item === undefined) throw new Error("no item");
  await h.put(item, bytes);
  const response = await h.confirm(thread.thread_id, {
    group_id: group.group_id,
    items: [{ file_id: item.file_id, parse }],
  });
  return { thread, response };
}

async function parsed(name: string, contentType: string, bytes: Uint8Array | string) {
  const { thread, response } = await confirmOne(name, contentType, bytes);
  expect(response.status).toBe(200);
  const attachment = ((await response.json()) as { items: Attachment[] }).items[0] as Attachment;
  expect(attachment).toMatchObject({
    status: "parsed",
    path: `uploads/attachments/${name}.md`,
    original_path: `uploads/${name}`,
  });
  const markdown = readFileSync(join(h.workdirOnDisk(thread), attachment.path), "utf8");
  return { thread, attachment, markdown };
}

describe("confirm with parse: true", () => {
  test.each([
    ["notes.txt", "text/plain", "plain text\nline two\n"],
    ["readme.md", "text/markdown; charset=utf-8", "# Title\n\n*emphasis*\n"],
    ["table.csv", "text/csv", "a,b\n1,2\n"],
    ["data.json", "application/json", '{"k": [1, 2, 3]}'],
    ["unknown-type.md", "application/octet-stream", "# by extension\n"],
  ])("%s (%s) is copied as-is", async (name, type, text) => {
    const { markdown } = await parsed(name, type, text);
    expect(markdown).toBe(text);
  });

  test("HTML becomes Markdown, without scripts or styles", async () => {
    const { markdown } = await parsed(
      "page.html",
      "text/html",
      "<html><head><title>Nope</title><style>p{}</style><script>alert(1)</script></head><body><h1>Hello</h1><p>Some <b>bold</b> and a <a href='https://example.com/'>link</a>.</p><ul><li>one</li><li>two</li></ul></body></html>",
    );
    expect(markdown).toContain("# Hello");
    expect(markdown).toContain("**bold**");
    expect(markdown).toContain("[link](https://example.com/)");
    expect(markdown).toMatch(/-\s+one/);
    expect(markdown).not.toContain("alert");
    expect(markdown).not.toContain("Nope");
  });

  test("PDF becomes text", async () => {
    const { markdown } = await parsed(
      "report.pdf",
      "application/pdf",
      pdfWithLines(["Quarterly report", "Revenue grew 12%"]),
    );
    expect(markdown).toContain("Quarterly report");
    expect(markdown).toContain("Revenue grew 12%");
  });

  test("DOCX becomes Markdown", async () => {
    const { markdown } = await parsed(
      "minutes.docx",
      DOCX_TYPE,
      docxWith("Minutes", ["First point", "Second point"]),
    );
    expect(markdown).toContain("# Minutes");
    expect(markdown).toContain("First point");
    expect(markdown).toContain("Second point");
  });

  test("output is bounded: a large text is cut at the limit and marked truncated", async () => {
    const big = "0123456789abcdef\n".repeat((2 * MAX_TEXT_BYTES) / 17);
    const { markdown, attachment, thread } = await parsed("big.txt", "text/plain", big);
    expect(Buffer.byteLength(markdown)).toBeLessThan(MAX_TEXT_BYTES + 200);
    expect(markdown.startsWith(big.slice(0, MAX_TEXT_BYTES - 1))).toBe(true);
    expect(markdown).toContain("[Extraction truncated: the full file is uploads/big.txt]");
    // The original keeps every byte.
    expect(readFileSync(join(h.workdirOnDisk(thread), attachment.original_path), "utf8")).toBe(big);
  });

  test("an unsupported type is 400 and leaves nothing", async () => {
    const { thread, response } = await confirmOne("photo.png", "image/png", "\x89PNG fake");
    expect(response.status).toBe(400);
    expect(((await response.json()) as ErrorJson).error.details).toMatchObject({
      reason: "attachment_type_not_parseable",
    });
    expect(h.uploadsOnDisk(thread)).toEqual([]);
    expect(
      await h.db.select().from(attachments).where(eq(attachments.threadId, thread.thread_id)),
    ).toEqual([]);
    // Without parse the same file is fine.
    const plain = await confirmOne("photo.png", "image/png", "\x89PNG fake", false);
    expect(plain.response.status).toBe(200);
  });

  test("an unreadable PDF is 400 and its original is removed too (all or nothing)", async () => {
    const thread = await h.createThread();
    const group = await h.requestUploads([
      { name: "fine.txt", size: 4, content_type: "text/plain" },
      { name: "broken.pdf", size: 13, content_type: "application/pdf" },
    ]);
    await h.put(group.items[0] as (typeof group.items)[number], "fine");
    await h.put(group.items[1] as (typeof group.items)[number], "not a PDF at all".slice(0, 13));
    const response = await h.confirm(thread.thread_id, {
      group_id: group.group_id,
      items: group.items.map((i) => ({ file_id: i.file_id, parse: true })),
    });
    expect(response.status).toBe(400);
    expect(((await response.json()) as ErrorJson).error.details).toMatchObject({
      reason: "attachment_unparseable",
    });
    expect(h.uploadsOnDisk(thread)).toEqual([]);
  });

  test.each([
    ["declares its real size", undefined],
    ["lies about its size", 1000],
  ])(
    "a DOCX zip bomb that %s is refused before conversion (422 extraction_limit), nothing left",
    async (_, declaredSize) => {
      const bomb = await deflatedZeros(64 * 1024 * 1024);
      const docx = buildZip([
        { name: "[Content_Types].xml", data: "<Types/>" },
        {
          name: "word/document.xml",
          raw: bomb,
          ...(declaredSize === undefined ? {} : { declaredSize }),
        },
      ]);
      const { thread, response } = await confirmOne("bomb.docx", DOCX_TYPE, docx);
      expect(response.status).toBe(422);
      expect(((await response.json()) as ErrorJson).error.details).toMatchObject({
        reason: "extraction_limit",
      });
      expect(h.uploadsOnDisk(thread)).toEqual([]);
    },
  );
});
