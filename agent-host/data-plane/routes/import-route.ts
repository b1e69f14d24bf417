import type { Context, Hono } from "hono";
import type { CapabilityClaims } from "../../../shared/capability/capability-claims.ts";
import {
  ATTACHMENT_IMPORT_PATH,
  type AttachmentImportRequest,
  attachmentImportRequestSchema,
  tmpUploadObjectKey,
} from "../../../shared/contracts/attachment-import.ts";
import { invalidRequestFromZod } from "../../../shared/contracts/contract-result.ts";
import { WorkcellError } from "../../../shared/errors/index.ts";
import { limitBody } from "../../../shared/http/body-limit.ts";
import { normalizeWorkdirPath } from "../../../shared/paths/normalize-workdir-path.ts";
import { uidDirname } from "../../../shared/paths/uid-dirname.ts";
import type { AttachmentImportConfig } from "../../attachments/attachment-import-config.ts";
import { DEFAULT_ATTACHMENT_IMPORT_LIMITS } from "../../attachments/attachment-import-limits.ts";
import { createTextExtractor } from "../../attachments/extraction/text-extractor.ts";
import { importAttachments } from "../../attachments/import-attachments.ts";
import { importRefusalError } from "../../attachments/import-refusal-error.ts";
import { requireOp } from "../capability-auth.ts";
import type { DataPlaneEnv } from "../data-plane-env.ts";
import { writeUnderQuota } from "../quota-guard.ts";
import { withWorkdir } from "../workdir-opener.ts";
import type { RouteDeps } from "./route-deps.ts";

export interface ImportRouteDeps extends RouteDeps {
  /** Without it (no ATTACHMENTS_BUCKET on this node) the endpoint answers 503. */
  readonly attachments: AttachmentImportConfig | undefined;
}

/** A lowercase UUID, as functions/ makes them (crypto.randomUUID). */
const LOWERCASE_UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/**
 * `POST /internal/v1/attachments/import` (op `import`, minted by functions/ for itself):
 * `{workdir_path, items: [{file_id, object_key, name, size, content_type, parse}]}` →
 * 200 `{items: [{file_id, file_name, original_path, path, size, status, truncated}]}`.
 * All or nothing (agent-host/attachments/import-attachments.ts): a missing object or one
 * of another size, an unsupported parse type or an unparseable document is 400 and leaves
 * nothing behind; a symlinked `uploads/` is 403.
 *
 * Trust: the capability selects the user and the Workdir, as everywhere. The S3 keys come
 * from the body, so they are held to the one shape functions/ makes, under the
 * capability's own uid: `tmp/<uid dirname>/<uuid>/<file_id>`. No other object of the
 * bucket, and no other user's upload, can be pulled into this Workdir, even by a leaked
 * capability.
 */
export function registerImportRoute(app: Hono<DataPlaneEnv>, deps: ImportRouteDeps): void {
  const limits = { ...DEFAULT_ATTACHMENT_IMPORT_LIMITS, ...deps.attachments?.limits };
  const extractor = deps.attachments?.extractor ?? createTextExtractor(limits);

  app.post(
    ATTACHMENT_IMPORT_PATH,
    limitBody(limits.maxRequestBodyBytes, "import request"),
    async (c) => {
      const claims = requireOp(c, "import");
      const config = deps.attachments;
      if (config === undefined) {
        throw new WorkcellError(
          "unavailable",
          "This agent-host has no attachments bucket: set ATTACHMENTS_BUCKET (and the AWS settings) for its data plane.",
        );
      }
      const body = await importBody(c);
      requireScope(body, claims);
      for (const item of body.items) {
        if (item.size > limits.maxObjectBytes) {
          throw new WorkcellError(
            "payload_too_large",
            `'${item.name}' is larger than ${limits.maxObjectBytes} bytes: attach a smaller file.`,
            { details: { file_id: item.file_id, limit: limits.maxObjectBytes } },
          );
        }
      }
      const signal = c.req.raw.signal;
      const announced = body.items.reduce((sum, item) => sum + item.size, 0);
      // Checked before streaming from S3; while streaming each object is cut off at its
      // announced size (import-attachments.ts), so the announced total is also the bound.
      // An extracted text file per parsed item counts as one more inode.
      const outcome = await writeUnderQuota(deps.quota, claims, Number.MAX_SAFE_INTEGER, signal, {
        incoming: {
          bytes: announced,
          inodes: body.items.length + body.items.filter((item) => item.parse).length,
        },
        write: () =>
          withWorkdir(deps.userWorkspaces, claims, { create: true, signal }, (fs) =>
            importAttachments(
              { objects: config.objects, extractor, limits, logger: c.var.logger },
              fs,
              body.items,
              signal,
            ),
          ),
        added: (result) =>
          result.ok ? { bytes: announced, inodes: result.items.length } : { bytes: 0, inodes: 0 },
      });
      if (!outcome.ok) throw importRefusalError(outcome);
      // The objects' bytes (each was cut off at, and checked against, its announced size).
      deps.bytes.inc({ direction: "in" }, announced);
      return c.json({ items: outcome.items }, 200);
    },
  );
}

async function importBody(c: Context<DataPlaneEnv>): Promise<AttachmentImportRequest> {
  let raw: unknown;
  try {
    raw = await c.req.json();
  } catch (err) {
    if (err instanceof WorkcellError) throw err; // the body limit
    throw new WorkcellError("invalid_request", "Send a JSON body: {workdir_path, items}.", {
      details: { reason: "malformed_json" },
    });
  }
  const parsed = attachmentImportRequestSchema.safeParse(raw);
  if (!parsed.success) throw invalidRequestFromZod(parsed.error);
  return parsed.data;
}

/** The body must name the capability's Workdir, and only that user's tmp uploads. */
function requireScope(body: AttachmentImportRequest, claims: CapabilityClaims): void {
  if (normalizeWorkdirPath(body.workdir_path) !== claims.workdir_path) {
    throw new WorkcellError(
      "forbidden",
      "workdir_path is not the Workdir the capability was minted for: mint one for this Workdir.",
      { details: { field: "workdir_path", reason: "capability_scope" } },
    );
  }
  const uidDir = uidDirname(claims.uid);
  for (const item of body.items) {
    if (!isOwnTmpKey(item.object_key, uidDir, item.file_id)) {
      throw new WorkcellError(
        "forbidden",
        "object_key is not a tmp upload of this capability's user: only tmp/<uid>/<group>/<file_id> can be imported.",
        { details: { field: "object_key", file_id: item.file_id, reason: "capability_scope" } },
      );
    }
  }
}

/** Exactly `tmp/<uidDir>/<uuid>/<fileId>`: no other prefix, no extra segment, no `..`. */
function isOwnTmpKey(key: string, uidDir: string, fileId: string): boolean {
  const group = key.split("/")[2] ?? "";
  return LOWERCASE_UUID.test(group) && key === tmpUploadObjectKey(uidDir, group, fileId);
}
