import { z } from "zod";

/**
 * What the web console (web/) reads at start from `/config.json` next to its index.html:
 * the local Workcell serves it (infra/local/console), a static deployment ships it as a
 * file (sst.config.ts writes one). One schema for the server that writes it and the SPA
 * that validates it (docs/decisions/0022-web-console.md). Plain `zod`, not the OpenAPI
 * flavour: it is bundled into the browser and is no API route.
 */
export const consoleConfigSchema = z.discriminatedUnion("mode", [
  z.object({
    mode: z.literal("local"),
    /** API origin; null = the page's own origin. */
    api_base_url: z.url().nullable(),
    /** Same-origin, local-only endpoint minting dev tokens ("continue as <uid>"). */
    dev_token_url: z.string().min(1),
  }),
  z.object({
    mode: z.literal("oidc"),
    api_base_url: z.url().nullable(),
    oidc: z.object({
      authority: z.url(),
      client_id: z.string().min(1),
      scope: z.string().min(1).default("openid profile"),
    }),
  }),
]);

export type ConsoleConfig = z.output<typeof consoleConfigSchema>;
