import { createRoute, type OpenAPIHono, z } from "@hono/zod-openapi";
import type { Logger } from "pino";
import {
  attachmentListSchema,
  attachmentsConfirmRequestSchema,
  uploadsRequestSchema,
  uploadsResponseSchema,
} from "../../shared/contracts/attachment.ts";
import type { Db } from "../../shared/db/client.ts";
import { WorkcellError } from "../../shared/errors/workcell-error.ts";
import { DEFAULT_USER_LIMITS, type UserLimits } from "../../shared/limits/user-limits.ts";
import type { Tracing } from "../../shared/telemetry/tracing.ts";
import type { AppEnv } from "../app-env.ts";
import { attachmentBody } from "../attachments/attachment-body.ts";
import type { AttachmentDeps } from "../attachments/attachment-deps.ts";
import { DEFAULT_ATTACHMENT_LIMITS } from "../attachments/attachment-limits.ts";
import { listAttachments } from "../attachments/attachment-store.ts";
import { confirmAttachments } from "../attachments/confirm-attachments.ts";
import { createUploadGroup } from "../attachments/create-upload-group.ts";
import { deleteAttachment } from "../attachments/delete-attachment.ts";
import { requestOriginOf } from "../data-plane/request-origin.ts";
import { idempotencyHeadersSchema } from "../idempotency/idempotency-key.ts";
import { findActiveThread } from "../threads/thread-store.ts";
import {
  bearerSecurity,
  commonErrors,
  errorResponse,
  threadIdParams,
  uuidPathParam,
} from "./openapi-common.ts";

/** What the attachment routes take from AppDeps. */
export type AttachmentRouteDeps = {
  readonly db: Db;
  readonly logger: Logger;
  readonly attachments: AttachmentDeps;
  readonly userLimitDefaults?: UserLimits;
  readonly tracing?: Tracing;
};

const attachmentParams = z.object({
  thread_id: uuidPathParam("thread_id", "Thread id"),
  file_id: uuidPathParam("file_id", "Attachment id"),
});

const uploadsRoute = createRoute({
  method: "post",
  path: "/v1/attachments/uploads",
  summary: "Presigned PUT URLs for files to attach (step 1 of 2)",
  description:
    "PUT each file's bytes to its `upload_url` with exactly `headers` before `expires_at`, then confirm the group into a thread. Also deletes the caller's unconfirmed groups older than 24 h. Not idempotent on purpose: a retry gets fresh URLs (the abandoned group expires).",
  security: bearerSecurity,
  request: {
    body: { content: { "application/json": { schema: uploadsRequestSchema } }, required: true },
  },
  responses: {
    201: {
      description: "Where to upload each file",
      content: { "application/json": { schema: uploadsResponseSchema } },
    },
    400: errorResponse("Bad body (e.g. a malformed content_type)."),
    413: errorResponse("A file, or the group together, is over the size limit."),
    ...commonErrors,
  },
});

const confirmRoute = createRoute({
  method: "post",
  path: "/v1/threads/{thread_id}/attachments/confirm",
  summary: "Import uploaded files into the thread's Workdir (step 2 of 2)",
  description:
    "All or nothing: each file lands in `uploads/` (a taken name gets a suffix like ` (1)`, nothing is overwritten); with `parse` its text goes to `uploads/attachments/<name>.md`.",
  security: bearerSecurity,
  request: {
    params: threadIdParams,
    headers: idempotencyHeadersSchema,
    body: {
      content: { "application/json": { schema: attachmentsConfirmRequestSchema } },
      required: true,
    },
  },
  responses: {
    200: {
      description: "The attachments, in request order",
      content: { "application/json": { schema: attachmentListSchema } },
    },
    400: errorResponse(
      "A file was never uploaded or has another size than announced, or cannot be parsed; nothing was written.",
    ),
    403: errorResponse("The Workdir's uploads/ is a symbolic link."),
    404: errorResponse("No such thread, group or file for this user; nothing was written."),
    409: errorResponse("Already confirmed, or Idempotency-Key reused with another body."),
    413: errorResponse("Body too large."),
    ...commonErrors,
  },
});

const listRoute = createRoute({
  method: "get",
  path: "/v1/threads/{thread_id}/attachments",
  summary: "The thread's attachments, oldest first",
  security: bearerSecurity,
  request: { params: threadIdParams },
  responses: {
    200: {
      description: "All of them",
      content: { "application/json": { schema: attachmentListSchema } },
    },
    404: errorResponse("No such thread for this user."),
    ...commonErrors,
  },
});

const deleteRoute = createRoute({
  method: "delete",
  path: "/v1/threads/{thread_id}/attachments/{file_id}",
  summary: "Delete an attachment and its files",
  security: bearerSecurity,
  request: { params: attachmentParams },
  responses: {
    204: { description: "Deleted" },
    404: errorResponse("No such thread or attachment for this user."),
    409: errorResponse("A pending or running run of the thread uses the attachment."),
    ...commonErrors,
  },
});

/**
 * docs/api.md "Attachments". functions/ authorizes (uid, thread, group, from Postgres) and
 * presigns; the bytes go browser → S3 → data plane → Workdir and never through here.
 */
export function registerAttachmentRoutes(
  app: OpenAPIHono<AppEnv>,
  deps: AttachmentRouteDeps,
): void {
  const { db } = deps;
  const { s3, presignS3, bucket, importer } = deps.attachments;
  const limits = { ...DEFAULT_ATTACHMENT_LIMITS, ...deps.attachments.limits };

  app.openapi(uploadsRoute, async (c) => {
    const body = await createUploadGroup(
      {
        db,
        s3,
        ...(presignS3 === undefined ? {} : { presignS3 }),
        bucket,
        logger: c.var.logger,
        limits,
      },
      c.var.principal.uid,
      c.req.valid("json"),
      c.req.raw.signal,
    );
    return c.json(body, 201);
  });

  app.openapi(confirmRoute, async (c) => {
    const body = await confirmAttachments(
      {
        db,
        s3,
        bucket,
        importer,
        logger: c.var.logger,
        limits,
        userLimitDefaults: deps.userLimitDefaults ?? DEFAULT_USER_LIMITS,
      },
      {
        uid: c.var.principal.uid,
        threadId: c.req.valid("param").thread_id,
        request: c.req.valid("json"),
        idempotencyKey: c.req.valid("header")["idempotency-key"],
        origin: requestOriginOf(c, deps.tracing),
      },
      c.req.raw.signal,
    );
    return c.json(body, 200);
  });

  app.openapi(listRoute, async (c) => {
    const { uid } = c.var.principal;
    const threadId = c.req.valid("param").thread_id;
    if ((await findActiveThread(db, uid, threadId)) === undefined) {
      throw new WorkcellError("not_found", "No such thread.");
    }
    const rows = await listAttachments(db, uid, threadId);
    return c.json({ items: rows.map(attachmentBody) }, 200);
  });

  app.openapi(deleteRoute, async (c) => {
    const { thread_id, file_id } = c.req.valid("param");
    await deleteAttachment(
      { db, importer, logger: c.var.logger },
      c.var.principal.uid,
      thread_id,
      file_id,
      requestOriginOf(c, deps.tracing),
    );
    return c.body(null, 204);
  });
}
