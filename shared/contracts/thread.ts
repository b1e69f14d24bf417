import { z } from "@hono/zod-openapi";
import { domainError } from "../errors/domain-errors.ts";
import { pageOf, timestampSchema, uuidSchema } from "./common.ts";
import { type ContractResult, invalidRequestFromZod } from "./contract-result.ts";

export const MAX_THREAD_TITLE_CHARS = 200;

/**
 * Same values as the database column. `deleted` threads answer 404, so clients only
 * ever see `active`; the value stays in the enum so a row can be serialised as is.
 */
export const THREAD_STATUSES = ["active", "deleted"] as const;

/**
 * Fields a client may believe it can set on a thread but may not: the Workdir belongs to
 * the project. They answer 422 (`unprocessable`), not 400, because the body is well-formed
 * and the client is asking for something the model forbids (docs/api.md "Threads").
 */
export const THREAD_CREATE_UNPROCESSABLE_FIELDS = ["workdir_path"] as const;

export const threadCreateRequestSchema = z
  .object({
    project_id: uuidSchema
      .optional()
      .describe("Project to work in; omit it to get a new implicit managed project."),
    title: z.string().trim().min(1).max(MAX_THREAD_TITLE_CHARS).optional().describe("Title."),
    parent_thread_id: uuidSchema
      .optional()
      .describe("Parent thread; the child inherits the parent's project."),
  })
  .strict()
  .openapi("ThreadCreateRequest")
  .describe("Create a thread (conversation). `workdir_path` is refused with 422.");

export const threadSchema = z
  .object({
    thread_id: uuidSchema.describe("Thread id."),
    project_id: uuidSchema.describe("The project whose Workdir the thread works in."),
    workdir_path: z.string().describe("The Workdir, relative to the workspace root."),
    parent_thread_id: uuidSchema.nullable().describe("Parent thread, null for a root thread."),
    title: z.string().nullable().describe("Title, null when none was given."),
    status: z
      .enum(THREAD_STATUSES)
      .describe("Always `active` on the wire (deleted threads are 404)."),
    created_at: timestampSchema.describe("Creation time."),
    awaiting_approval: z
      .number()
      .int()
      .positive()
      .optional()
      .describe(
        "In the thread list: how many of its runs wait for a person's approval (absent: none).",
      ),
  })
  .openapi("Thread")
  .describe("A thread: one conversation.");

export const threadPageSchema = pageOf(threadSchema).describe("Threads, newest first.");

export type ThreadCreateRequest = z.infer<typeof threadCreateRequestSchema>;
export type Thread = z.infer<typeof threadSchema>;

/**
 * Which catalogue code a failed thread-create parse answers with. For routes that get
 * the ZodError from a validator hook: `unprocessable` when the body tried to set an
 * unprocessable field, else `invalid_request`.
 */
export function threadCreateErrorCode(error: z.ZodError): "unprocessable" | "invalid_request" {
  return unprocessableFieldIn(error) === undefined ? "invalid_request" : "unprocessable";
}

/** Parses a thread-create body; the error is ready to throw (422 or 400). */
export function parseThreadCreateRequest(input: unknown): ContractResult<ThreadCreateRequest> {
  const result = threadCreateRequestSchema.safeParse(input);
  if (result.success) return { ok: true, value: result.data };
  const field = unprocessableFieldIn(result.error);
  if (field !== undefined) {
    return { ok: false, error: domainError("workdir_path_not_allowed", { details: { field } }) };
  }
  return { ok: false, error: invalidRequestFromZod(result.error) };
}

function unprocessableFieldIn(error: z.ZodError): string | undefined {
  for (const issue of error.issues) {
    if (issue.code !== "unrecognized_keys" || issue.path.length !== 0) continue;
    const found = issue.keys.find((key) =>
      (THREAD_CREATE_UNPROCESSABLE_FIELDS as readonly string[]).includes(key),
    );
    if (found !== undefined) return found;
  }
  return undefined;
}
