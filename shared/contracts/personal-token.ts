import { z } from "@hono/zod-openapi";
import { timestampSchema, uuidSchema } from "./common.ts";

/** What a personal access token may do (docs/api.md "Personal access tokens"). */
export const TOKEN_SCOPES = ["runs", "files", "admin"] as const;
export type TokenScope = (typeof TOKEN_SCOPES)[number];
export const MAX_TOKEN_NAME_CHARS = 100;
export const MAX_TOKEN_DAYS = 366;

const scopesSchema = z
  .array(z.enum(TOKEN_SCOPES))
  .min(1)
  .max(TOKEN_SCOPES.length)
  .refine((scopes) => new Set(scopes).size === scopes.length, "Each scope at most once.")
  .describe(
    "`runs`: projects, threads, runs, events, attachments, skills, usage; `files`: the data-plane capabilities (`POST …/files/access`); `admin`: the `/v1/admin/*` routes (only an admin may grant it).",
  );

/** `POST /v1/tokens` */
export const tokenCreateRequestSchema = z
  .object({
    name: z.string().trim().min(1).max(MAX_TOKEN_NAME_CHARS).describe("What the token is for."),
    expires_in_days: z
      .number()
      .int()
      .min(1)
      .max(MAX_TOKEN_DAYS)
      .optional()
      .describe(`Days until it stops working (1 to ${MAX_TOKEN_DAYS}); omit it for no expiry.`),
    scopes: scopesSchema.optional().describe('Default: ["runs", "files"].'),
  })
  .strict()
  .openapi("TokenCreateRequest");

export const personalTokenSchema = z
  .object({
    token_id: uuidSchema.describe("Token id (also in the token itself, after `wct_`)."),
    name: z.string().describe("What the token is for."),
    scopes: z.array(z.enum(TOKEN_SCOPES)).describe("What it may do."),
    created_at: timestampSchema,
    expires_at: timestampSchema.nullable().describe("When it stops working; null: never."),
    last_used_at: timestampSchema
      .nullable()
      .describe("The last request it authenticated (to the minute); null: never used."),
    revoked_at: timestampSchema.nullable().describe("When it was revoked; null: it was not."),
  })
  .openapi("PersonalToken")
  .describe("A personal access token, without its secret.");

export const tokenCreateResponseSchema = personalTokenSchema
  .extend({
    token: z
      .string()
      .describe(
        "The token (`wct_…`), shown this once: it is stored only as a keyed hash. Send it as `Authorization: Bearer`.",
      ),
  })
  .openapi("CreatedPersonalToken");

export const tokenListSchema = z
  .object({ items: z.array(personalTokenSchema) })
  .openapi("PersonalTokenList");

export type PersonalToken = z.infer<typeof personalTokenSchema>;
