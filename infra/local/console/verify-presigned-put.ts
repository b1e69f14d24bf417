import { timingSafeEqual } from "node:crypto";
import type { S3Client } from "@aws-sdk/client-s3";
import { presignUpload } from "../../../functions/attachments/presign-upload.ts";
import { MAX_SKILL_ARCHIVE_BYTES } from "../../../functions/skills/skill-admin-contracts.ts";
import { presignSkillArchivePut } from "../../../functions/skills/skill-archive-uploads.ts";

/** What a verified presigned PUT grants: one object, one size (when signed), until expiry. */
export type PutGrant = {
  bucket: string;
  key: string;
  contentType: string;
  /** The signed length (attachments); undefined when the URL signs none (skill archives). */
  contentLength: number | undefined;
  /** Bytes the PUT may carry: the signed length, else the skill archive limit. */
  maxBytes: number;
  /** Which presigner made it, so that the forwarded PUT is signed the same way. */
  kind: "attachment" | "skill_archive";
  expiresInSeconds: number;
};

export type PutRefusal = { ok: false; status: 403 | 411 | 413; reason: string };

const AMZ_DATE = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/;
/** A signature dated further ahead than this is refused (clock skew allowance). */
const MAX_FUTURE_SKEW_MS = 5 * 60_000;

/**
 * Verifies a PUT to the local upload path against the URL the server handed out: the
 * signature is re-derived with the same presigner and the upload credentials (which the
 * emulator does not accept), for the request's bucket, key, content type and (when the URL
 * signs one) length, at the URL's date and expiry; the expiry is checked against `now`.
 * Another key, method, size or content type, an expired or tampered URL: refused. The
 * caller forwards only what this grants, signed with the emulator's own credentials.
 */
export async function verifyPresignedPut(p: {
  /** The request's URL below the proxy prefix: /<bucket>/<key>?<presigned query>. */
  path: string;
  query: URLSearchParams;
  contentType: string | undefined;
  contentLength: string | undefined;
  /** The client the URLs were presigned with (upload credentials, public endpoint). */
  presigner: S3Client;
  now: Date;
}): Promise<({ ok: true } & PutGrant) | PutRefusal> {
  const refuse = (reason: string, status: PutRefusal["status"] = 403): PutRefusal => ({
    ok: false,
    status,
    reason,
  });
  const target = bucketAndKey(p.path);
  const signature = p.query.get("X-Amz-Signature");
  const date = parseAmzDate(p.query.get("X-Amz-Date"));
  const expires = Number(p.query.get("X-Amz-Expires"));
  if (!target || !signature || !date || !Number.isInteger(expires) || expires <= 0) {
    return refuse("not a presigned upload URL");
  }
  if (date.getTime() - p.now.getTime() > MAX_FUTURE_SKEW_MS) return refuse("signed in the future");
  if (p.now.getTime() > date.getTime() + expires * 1000) return refuse("the URL has expired");
  if (p.contentLength === undefined) return refuse("Content-Length is required", 411);
  const length = Number(p.contentLength);
  if (!Number.isSafeInteger(length) || length < 0) return refuse("bad Content-Length");
  const signed = (p.query.get("X-Amz-SignedHeaders") ?? "").split(";");
  const contentType = p.contentType ?? "";
  const kind = signed.includes("content-length") ? "attachment" : "skill_archive";
  const expected =
    kind === "attachment"
      ? await presignUpload(p.presigner, {
          ...target,
          size: length,
          contentType,
          expiresInSeconds: expires,
          signedAt: date,
        }).then((u) => u.url)
      : await presignSkillArchivePut(p.presigner, {
          ...target,
          expiresInSeconds: expires,
          signedAt: date,
        });
  const want = new URL(expected).searchParams.get("X-Amz-Signature") ?? "";
  if (!sameHex(want, signature)) return refuse("the signature does not match this request");
  const maxBytes = kind === "attachment" ? length : MAX_SKILL_ARCHIVE_BYTES;
  if (length > maxBytes) return refuse("larger than the upload allows", 413);
  return {
    ok: true,
    ...target,
    contentType,
    contentLength: kind === "attachment" ? length : undefined,
    maxBytes,
    kind,
    expiresInSeconds: expires,
  };
}

/** Signs the verified grant again with the emulator's credentials, for the forwarded PUT. */
export async function presignForEmulator(
  s3: S3Client,
  grant: PutGrant,
  now: Date,
): Promise<string> {
  const forward = { bucket: grant.bucket, key: grant.key, expiresInSeconds: 60, signedAt: now };
  if (grant.kind === "skill_archive") return presignSkillArchivePut(s3, forward);
  const size = grant.contentLength ?? 0;
  return (await presignUpload(s3, { ...forward, size, contentType: grant.contentType })).url;
}

function bucketAndKey(path: string): { bucket: string; key: string } | undefined {
  const parts = path.split("/").slice(1);
  if (parts.length < 2 || parts.some((s) => s === "")) return undefined;
  try {
    const [bucket = "", ...key] = parts.map((s) => decodeURIComponent(s));
    return { bucket, key: key.join("/") };
  } catch {
    return undefined;
  }
}

function parseAmzDate(value: string | null): Date | undefined {
  const m = value === null ? null : AMZ_DATE.exec(value);
  if (!m) return undefined;
  const [, y, mo, d, h, mi, s] = m.map(Number);
  return new Date(Date.UTC(y ?? 0, (mo ?? 1) - 1, d, h, mi, s));
}

function sameHex(a: string, b: string): boolean {
  const x = Buffer.from(a, "utf8");
  const y = Buffer.from(b, "utf8");
  return x.length === y.length && timingSafeEqual(x, y);
}
