import { z } from "@hono/zod-openapi";

/** Largest page a list endpoint returns, whatever `limit` asks for. */
export const MAX_PAGE_LIMIT = 100;
/** Page size when `limit` is omitted. */
export const DEFAULT_PAGE_LIMIT = 50;
/** Cursors are opaque server-made tokens; anything longer is not one of ours. */
export const MAX_CURSOR_CHARS = 512;
/** Longest uid (OIDC `sub`) accepted; OIDC recommends at most 255 ASCII characters. */
export const MAX_UID_CHARS = 1024;

export const uuidSchema = z.uuid().describe("A UUID.");

export const timestampSchema = z.iso
  .datetime({ offset: true })
  .describe("An RFC 3339 timestamp, e.g. 2025-01-31T12:00:00Z.");

export const uidSchema = z
  .string()
  .min(1)
  .max(MAX_UID_CHARS)
  .describe("A user id: the OIDC subject (`sub`) of the caller.");

/** `?cursor=&limit=` of cursor-paged lists. Query strings are not strict: proxies add parameters. */
export const pageQuerySchema = z.object({
  cursor: z
    .string()
    .min(1)
    .max(MAX_CURSOR_CHARS)
    .optional()
    .describe("Opaque cursor from `next_cursor` of the previous page; omit for the first page."),
  limit: z.coerce
    .number()
    .int()
    .min(1)
    .max(MAX_PAGE_LIMIT)
    .default(DEFAULT_PAGE_LIMIT)
    .describe(`Items per page, 1 to ${MAX_PAGE_LIMIT} (default ${DEFAULT_PAGE_LIMIT}).`),
});

/** `{items}`: an unpaged list of the caller's resources. */
export function listOf<T extends z.ZodType>(item: T) {
  return z.object({ items: z.array(item).describe("The items, all of them.") });
}

/** `{items, next_cursor}`: one page of a cursor-paged list. */
export function pageOf<T extends z.ZodType>(item: T) {
  return z.object({
    items: z.array(item).describe("The items of this page."),
    next_cursor: z
      .string()
      .nullable()
      .describe("Pass as `cursor` to get the next page; null on the last page."),
  });
}

/** An empty body: endpoints without parameters still refuse unexpected fields. */
export const emptyRequestSchema = z.object({}).strict().describe("No fields.");
