import { describe, expect, test } from "vitest";
import {
  attachmentFileNameProblem,
  attachmentListSchema,
  attachmentSchema,
  attachmentsConfirmRequestSchema,
  dataPlaneFileListSchema,
  filesAccessRequestSchema,
  filesAccessResponseSchema,
  MAX_ATTACHMENT_BYTES,
  MAX_FILES_PER_UPLOAD_GROUP,
  MAX_UPLOAD_NAME_CHARS,
  oversizedUploadError,
  skillListSchema,
  skillSlugSchema,
  uploadsRequestSchema,
  uploadsResponseSchema,
} from "../../../shared/contracts/index.ts";
import { httpStatusOf } from "../../../shared/errors/index.ts";

const ID = "0f8fd04e-1c8b-4c4b-9a4e-6f2d3b1a0c9d";
const ID2 = "1f8fd04e-1c8b-4c4b-9a4e-6f2d3b1a0c9d";
const AT = "2025-01-31T12:00:00Z";

const file = { name: "report.pdf", size: 1024, content_type: "application/pdf" };

describe("uploads request", () => {
  test("accepts 1 to the group limit of files", () => {
    expect(uploadsRequestSchema.parse({ files: [file] })).toEqual({ files: [file] });
    const max = Array.from({ length: MAX_FILES_PER_UPLOAD_GROUP }, () => file);
    expect(uploadsRequestSchema.safeParse({ files: max }).success).toBe(true);
    expect(uploadsRequestSchema.safeParse({ files: [...max, file] }).success).toBe(false);
    expect(uploadsRequestSchema.safeParse({ files: [] }).success).toBe(false);
  });

  test.each([
    [""],
    ["  "],
    ["."],
    [".."],
    ["a/b"],
    ["a\\b"],
    ["a\u0000b"],
    ["a\nb"],
    ["x".repeat(256)],
  ])(
    "rejects file name %j as a Workdir name; the uploads request takes it (sanitized by the server)",
    (name) => {
      expect(attachmentFileNameProblem(name)).toBeDefined();
      expect(uploadsRequestSchema.safeParse({ files: [{ ...file, name }] }).success).toBe(true);
    },
  );

  test("the uploads request refuses a raw name over MAX_UPLOAD_NAME_CHARS", () => {
    const name = "x".repeat(MAX_UPLOAD_NAME_CHARS + 1);
    expect(uploadsRequestSchema.safeParse({ files: [{ ...file, name }] }).success).toBe(false);
  });

  test.each([["report.pdf"], [".env"], ["résumé (1).docx"], ["x".repeat(255)]])(
    "accepts file name %j",
    (name) => {
      expect(attachmentFileNameProblem(name)).toBeUndefined();
    },
  );

  test("rejects bad sizes and unknown fields with a 400-style schema failure", () => {
    for (const bad of [
      { ...file, size: -1 },
      { ...file, size: 1.5 },
      { ...file, size: "1" },
      { ...file, path: "x" },
    ]) {
      expect(uploadsRequestSchema.safeParse({ files: [bad] }).success).toBe(false);
    }
  });

  test("an oversized file passes the schema but yields a 413, naming the file", () => {
    const big = { ...file, name: "big.iso", size: MAX_ATTACHMENT_BYTES + 1 };
    const request = uploadsRequestSchema.parse({ files: [file, big] });
    const error = oversizedUploadError(request);
    expect(error?.code).toBe("payload_too_large");
    expect(error && httpStatusOf(error.code)).toBe(413);
    expect(error?.details).toMatchObject({ names: ["big.iso"], max_bytes: MAX_ATTACHMENT_BYTES });
    expect(
      oversizedUploadError(
        uploadsRequestSchema.parse({ files: [{ ...file, size: MAX_ATTACHMENT_BYTES }] }),
      ),
    ).toBeUndefined();
    expect(oversizedUploadError(request, 10)?.details).toMatchObject({
      names: ["report.pdf", "big.iso"],
    });
  });
});

describe("uploads response, confirm, attachment", () => {
  test("uploads response", () => {
    const response = {
      group_id: ID,
      items: [
        {
          file_id: ID2,
          name: "report.pdf",
          upload_url: "https://bucket.s3.amazonaws.com/tmp/u/g/f?X-Amz-Signature=abc",
          method: "PUT",
          headers: { "Content-Type": "application/pdf" },
          expires_at: AT,
        },
      ],
    };
    expect(uploadsResponseSchema.parse(response)).toEqual(response);
    const post = { ...response, items: [{ ...response.items[0], method: "POST" }] };
    expect(uploadsResponseSchema.safeParse(post).success).toBe(false);
  });

  test("confirm request: strict, non-empty, each file once", () => {
    const body = { group_id: ID, items: [{ file_id: ID2, parse: true }] };
    expect(attachmentsConfirmRequestSchema.parse(body)).toEqual(body);
    expect(attachmentsConfirmRequestSchema.safeParse({ group_id: ID, items: [] }).success).toBe(
      false,
    );
    expect(
      attachmentsConfirmRequestSchema.safeParse({
        group_id: ID,
        items: [{ file_id: ID2, extra: 1 }],
      }).success,
    ).toBe(false);
    const twice = attachmentsConfirmRequestSchema.safeParse({
      group_id: ID,
      items: [{ file_id: ID2 }, { file_id: ID2 }],
    });
    expect(twice.success).toBe(false);
    expect(twice.error?.issues[0]?.path).toEqual(["items", 1, "file_id"]);
  });

  test("attachment resource and list", () => {
    const attachment = {
      file_id: ID,
      file_name: "report.pdf",
      content_type: "application/pdf",
      size: 1024,
      status: "parsed",
      path: "uploads/attachments/report.pdf.md",
      original_path: "uploads/report.pdf",
      uploaded_at: AT,
    };
    expect(attachmentSchema.parse(attachment)).toEqual(attachment);
    expect(attachmentListSchema.parse({ items: [attachment] }).items).toHaveLength(1);
    expect(attachmentSchema.safeParse({ ...attachment, status: "pending" }).success).toBe(false);
  });
});

describe("files access", () => {
  test("request lists distinct ops", () => {
    expect(filesAccessRequestSchema.parse({ ops: ["read", "write"] })).toEqual({
      ops: ["read", "write"],
    });
    for (const bad of [
      { ops: [] },
      { ops: ["read", "read"] },
      { ops: ["exec"] },
      { ops: ["read"], path: "/" },
      {},
    ]) {
      expect(filesAccessRequestSchema.safeParse(bad).success).toBe(false);
    }
  });

  test("response", () => {
    const response = { base_url: "https://dp.example.com", token: "eyJ...", expires_at: AT };
    expect(filesAccessResponseSchema.parse(response)).toEqual(response);
    expect(
      filesAccessResponseSchema.safeParse({ ...response, base_url: "not a url" }).success,
    ).toBe(false);
  });

  test("data-plane listing only has files and dirs", () => {
    const listing = { items: [{ name: "a.txt", type: "file", size: 3, mtime: AT }] };
    expect(dataPlaneFileListSchema.parse(listing)).toEqual(listing);
    const symlink = { items: [{ name: "l", type: "symlink", size: 0, mtime: AT }] };
    expect(dataPlaneFileListSchema.safeParse(symlink).success).toBe(false);
  });
});

describe("skills", () => {
  test("list item", () => {
    const list = { items: [{ slug: "pdf-tools", kind: "shared", description: "" }] };
    expect(skillListSchema.parse(list)).toEqual(list);
    expect(
      skillListSchema.safeParse({ items: [{ slug: "x", kind: "global", description: "" }] })
        .success,
    ).toBe(false);
  });

  test("slug rule: one safe path component", () => {
    for (const slug of ["pdf-tools", "a", "A.b_c-1"])
      expect(skillSlugSchema.safeParse(slug).success).toBe(true);
    for (const slug of ["", ".", "..", ".hidden", "-x", "a/b", "a b", "x".repeat(129)]) {
      expect(skillSlugSchema.safeParse(slug).success).toBe(false);
    }
  });
});
