import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { freePort } from "../../../setup/free-port.ts";
import { type ServerProcess, startServerProcess } from "./server-process.ts";

const ROOT = join(import.meta.dirname, "../../../..");
export const WRANGLER = join(ROOT, "node_modules/.bin/wrangler");
export const WRANGLER_CONFIG = join(ROOT, "infra/wrangler.toml");
/** wrangler without telemetry, prompts or colours. */
export const WRANGLER_ENV = {
  ...process.env,
  WRANGLER_SEND_METRICS: "false",
  CI: "1",
  NO_COLOR: "1",
};

/**
 * `wrangler dev` of infra/wrangler.toml: functions/entry/worker.ts in the real workerd
 * runtime from npm (offline), its bindings from `vars` (an env file in `scratch`), the Cron
 * Trigger reachable at /__scheduled. `logLevel` is wrangler's: the Worker's console lines
 * (its pino lines, 0078) are printed only from `info` on, whatever the Worker's LOG_LEVEL.
 */
export async function startWranglerDev(p: {
  scratch: string;
  vars: Record<string, string>;
  logLevel: "warn" | "info";
}): Promise<ServerProcess> {
  const envFile = join(p.scratch, "worker.env");
  await writeFile(
    envFile,
    Object.entries(p.vars)
      .map(([k, v]) => `${k}='${v}'`)
      .join("\n"),
  );
  // freePort() finds ports free now; another test file's server can bind one before
  // workerd does (wrangler then exits with "Address already in use"). Fresh ports then.
  for (let attempt = 1; ; attempt++) {
    try {
      return await startOnce(envFile, p.scratch, p.logLevel);
    } catch (error) {
      if (attempt >= START_ATTEMPTS || !/Address already in use/.test(String(error))) throw error;
    }
  }
}

const START_ATTEMPTS = 3;

async function startOnce(
  envFile: string,
  scratch: string,
  logLevel: "warn" | "info",
): Promise<ServerProcess> {
  const port = await freePort();
  return startServerProcess({
    command: WRANGLER,
    args: [
      "dev",
      "--config",
      WRANGLER_CONFIG,
      "--local",
      "--ip",
      "127.0.0.1",
      "--port",
      String(port),
      "--inspector-port",
      String(await freePort()),
      "--env-file",
      envFile,
      "--persist-to",
      join(scratch, "state"),
      "--test-scheduled",
      "--show-interactive-dev-session=false",
      "--log-level",
      logLevel,
    ],
    env: WRANGLER_ENV,
    cwd: scratch,
    url: `http://127.0.0.1:${port}`,
    readyPath: "/openapi.json",
    readyTimeoutMs: 90_000,
  });
}
