import { z } from "zod";

/**
 * What the console (web/) reads at start from `/config.json` next to its index.html:
 * the local Workcell serves it; a static deployment ships it as a file
 * (docs/decisions/0022-web-console.md). The SPA validates it with its own copy of this
 * shape, because the web build cannot import server code.
 */
export const consoleConfigSchema = z.discriminatedUnion("mode", [
  z.object({
    mode: z.literal("local"),
    /** API origin; null = the page's own origin. */
    api_base_url: z.string().url().nullable(),
    /** Same-origin, local-only endpoint minting dev tokens ("continue as <uid>"). */
    dev_token_url: z.string().min(1),
  }),
  z.object({
    mode: z.literal("oidc"),
    api_base_url: z.string().url().nullable(),
    oidc: z.object({
      authority: z.string().url(),
      client_id: z.string().min(1),
      scope: z.string().min(1).default("openid profile"),
    }),
  }),
]);

export type ConsoleConfig = z.output<typeof consoleConfigSchema>;

/** Path of the local dev-token endpoint (local mode only; never part of a cloud entry). */
export const LOCAL_DEV_TOKEN_PATH = "/local/dev-token";
/** Same-origin path that forwards browser uploads to the S3 emulator (local mode only). */
export const LOCAL_S3_PROXY_PATH = "/local/s3";

export const LOCAL_CONSOLE_CONFIG: ConsoleConfig = {
  mode: "local",
  api_base_url: null,
  dev_token_url: LOCAL_DEV_TOKEN_PATH,
};
