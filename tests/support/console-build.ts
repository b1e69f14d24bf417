import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { build } from "vite";
import { buildSdk, SDK_DIR } from "../../sdk/scripts/build-package.ts";
import { consoleViteConfig } from "../../web/vite.config.ts";

/**
 * A production build of web/ from the current sources into a fresh directory, on the SDK
 * package compiled from its current sources into a directory of its own (the console
 * uses the built package; parallel test files never share a half-written dist/).
 */
export async function buildConsole(): Promise<{ dir: string; remove(): Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), "workcell-web-"));
  // Inside sdk/: the compiled files resolve openapi-fetch from the repository's node_modules.
  const sdk = await mkdtemp(join(SDK_DIR, ".build-"));
  try {
    const config = consoleViteConfig(await buildSdk(sdk));
    await build({
      ...config,
      configFile: false,
      logLevel: "warn",
      build: { ...config.build, outDir: dir, emptyOutDir: true, sourcemap: false },
    });
  } finally {
    await rm(sdk, { recursive: true, force: true });
  }
  return { dir, remove: () => rm(dir, { recursive: true, force: true }) };
}
