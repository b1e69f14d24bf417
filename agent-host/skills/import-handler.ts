import { GetObjectCommand, type GetObjectCommandOutput, type S3Client } from "@aws-sdk/client-s3";
import type {
  SkillImportRequest,
  SkillImportResult,
} from "../../shared/contracts/skills-data-plane.ts";
import { WorkcellError } from "../../shared/errors/index.ts";
import type { SkillImporter } from "./skill-importer.ts";
import { DEFAULT_SKILL_LIMITS, type SkillLimits } from "./skill-limits.ts";

/**
 * Object keys of uploaded skill archives: `skill-uploads/<uuid>`. The control plane mints
 * them (functions/skills/skill-archive-uploads.ts); anything else is refused here, so the
 * import can never be pointed at another object of the bucket (an attachment, say).
 */
export const SKILL_UPLOAD_KEY =
  /^skill-uploads\/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

export interface SkillImportHandlerDeps {
  readonly s3: S3Client;
  /** The bucket uploads go to (the agent-host's own setting, never the caller's). */
  readonly bucket: string;
  readonly importer: SkillImporter;
  readonly limits?: Partial<SkillLimits>;
}

export interface SkillImportHandler {
  handle(request: SkillImportRequest, signal: AbortSignal): Promise<SkillImportResult>;
}

/**
 * The agent-host side of `POST /v1/admin/skills`: fetches the uploaded archive from S3
 * (bounded: the declared length is checked first and the bytes are counted as they come)
 * and imports it with the safe extractor.
 */
export function createSkillImportHandler(deps: SkillImportHandlerDeps): SkillImportHandler {
  const limits: SkillLimits = { ...DEFAULT_SKILL_LIMITS, ...deps.limits };
  return {
    async handle(request, signal) {
      if (!SKILL_UPLOAD_KEY.test(request.key)) {
        throw new WorkcellError("invalid_request", "Not a skill upload key.", {
          details: { field: "key" },
        });
      }
      const downloaded = await download(deps, request.key, limits.maxArchiveBytes, signal);
      if (!downloaded.ok) return downloaded;
      return deps.importer.importArchive(
        { slug: request.slug, archive: downloaded.archive, sourceVersion: request.sourceVersion },
        signal,
      );
    },
  };
}

async function download(
  deps: SkillImportHandlerDeps,
  key: string,
  maxBytes: number,
  signal: AbortSignal,
): Promise<
  | { ok: true; archive: Buffer }
  | { ok: false; reason: "archive_missing" | "archive_too_large"; message: string }
> {
  let out: GetObjectCommandOutput;
  try {
    out = await deps.s3.send(new GetObjectCommand({ Bucket: deps.bucket, Key: key }), {
      abortSignal: signal,
    });
  } catch (err) {
    signal.throwIfAborted();
    const name = (err as { name?: unknown }).name;
    if (name === "NoSuchKey" || name === "NotFound") {
      return {
        ok: false,
        reason: "archive_missing",
        message: "No archive was uploaded for this upload id: upload it, then import.",
      };
    }
    throw new WorkcellError("unavailable", "The upload store cannot be reached: retry.", {
      cause: err,
    });
  }
  const tooLarge = {
    ok: false as const,
    reason: "archive_too_large" as const,
    message: `The archive is larger than ${maxBytes} bytes.`,
  };
  if ((out.ContentLength ?? 0) > maxBytes) {
    (out.Body as { destroy?: () => void } | undefined)?.destroy?.();
    return tooLarge;
  }
  const chunks: Buffer[] = [];
  let total = 0;
  for await (const chunk of out.Body as AsyncIterable<Uint8Array>) {
    total += chunk.byteLength;
    if (total > maxBytes) {
      (out.Body as { destroy?: () => void }).destroy?.();
      return tooLarge;
    }
    chunks.push(Buffer.from(chunk));
  }
  return { ok: true, archive: Buffer.concat(chunks) };
}
