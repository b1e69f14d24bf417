import { z } from "zod";

// The same shape as infra/local/console/console-config.ts (the server's copy); the web
// build cannot import server code. docs/decisions/0022-web-console.md.
export const consoleConfigSchema = z.discriminatedUnion("mode", [
  z.object({
    mode: z.literal("local"),
    api_base_url: z.string().url().nullable(),
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

/**
 * `/config.json` next to index.html: served by the local Workcell, a file of a static
 * deployment. Not a Workcell API call, so it does not go through the API client.
 */
export async function loadConsoleConfig(signal: AbortSignal): Promise<ConsoleConfig> {
  const res = await fetch(`${import.meta.env.BASE_URL}config.json`, { signal });
  if (!res.ok) {
    throw new Error(
      `The console's /config.json answered ${res.status}: deploy it next to index.html (docs/decisions/0022-web-console.md).`,
    );
  }
  const parsed = consoleConfigSchema.safeParse(await res.json());
  if (!parsed.success) throw new Error(`/config.json is malformed: ${parsed.error.message}`);
  return parsed.data;
}

export function apiBaseUrl(config: ConsoleConfig): string {
  return config.api_base_url ?? window.location.origin;
}
