import { PutObjectCommand, type S3Client } from "@aws-sdk/client-s3";
import { getSignedUrl } from "@aws-sdk/s3-request-presigner";

export type PresignUploadInput = {
  bucket: string;
  key: string;
  size: number;
  contentType: string;
  expiresInSeconds: number;
  /** The signature's date (X-Amz-Date); the URL expires expiresInSeconds after it. */
  signedAt: Date;
};

export type PresignedUpload = {
  url: string;
  /** Headers the PUT must send exactly (Content-Length is sent by any HTTP client). */
  headers: Record<string, string>;
};

/**
 * The headers the signature covers besides `host`. Signing `content-length` makes S3
 * refuse a PUT of any other size (SignatureDoesNotMatch), so the announced size, which the
 * limits were checked against, is the size stored; `content-type` likewise.
 */
const SIGNED_HEADERS = new Set(["content-length", "content-type"]);

/**
 * A presigned PUT for one tmp object (SigV4 query signing; pure computation with the
 * client's credentials, no request to S3).
 *
 * The SDK's default "flexible checksums" would sign a CRC32 of the *empty* body into the
 * URL (`x-amz-checksum-crc32=AAAAAA==`), and S3 would then refuse every real upload; the
 * browser's bytes are unknown here, so those parameters are removed before signing.
 */
export async function presignUpload(
  s3: S3Client,
  input: PresignUploadInput,
): Promise<PresignedUpload> {
  const command = new PutObjectCommand({
    Bucket: input.bucket,
    Key: input.key,
    ContentType: input.contentType,
    ContentLength: input.size,
  });
  // Build step, lowest priority: runs inside the checksum middleware (same step, normal
  // priority), after it added its headers and before the presigner moves headers to the
  // query and signs.
  command.middlewareStack.add(
    (next) => async (args) => {
      const request = args.request as { headers?: Record<string, string> };
      for (const name of Object.keys(request.headers ?? {})) {
        const lower = name.toLowerCase();
        if (lower.startsWith("x-amz-checksum-") || lower === "x-amz-sdk-checksum-algorithm") {
          delete request.headers?.[name];
        }
      }
      return next(args);
    },
    { step: "build", priority: "low", name: "workcellDropUploadChecksum" },
  );
  const url = await getSignedUrl(s3, command, {
    expiresIn: input.expiresInSeconds,
    signingDate: input.signedAt,
    signableHeaders: SIGNED_HEADERS,
  });
  return { url, headers: { "Content-Type": input.contentType } };
}
