import {
  type ConsoleConfig,
  consoleConfigSchema,
} from "../../../shared/contracts/console-config.ts";

export type { ConsoleConfig };

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
