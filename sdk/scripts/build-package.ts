// Builds the package's dist/ (ESM + .d.ts + source maps) from src/ and cli/ with tsc.
import { execFile } from "node:child_process";
import { chmod, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { promisify } from "node:util";

export const SDK_DIR = join(import.meta.dirname, "..");
const run = promisify(execFile);
/** tsc on a loaded machine takes seconds; a hung one must not hold a test or a pack. */
const BUILD_TIMEOUT_MS = 180_000;

/**
 * Compiles into `outDir` (default sdk/dist), replacing what was there. Tests build into
 * a directory of their own, so parallel files never see a half-written dist/. The sources
 * import `./x.ts` (Node runs them as they are in the repository); tsc rewrites those to
 * `.js` in the JavaScript, and this rewrites them in the declarations too, so a consumer's
 * tsc of any version resolves them as ordinary `.js` imports.
 */
export async function buildSdk(
  outDir = join(SDK_DIR, "dist"),
  signal: AbortSignal = AbortSignal.timeout(BUILD_TIMEOUT_MS),
): Promise<string> {
  await rm(outDir, { recursive: true, force: true });
  // The package's `tsc` bin (its exports map hides the file itself).
  const manifest = createRequire(import.meta.url).resolve("typescript/package.json");
  const tsc = join(dirname(manifest), "bin", "tsc");
  await run(
    process.execPath,
    [tsc, "-p", join(SDK_DIR, "tsconfig.build.json"), "--outDir", outDir],
    { cwd: SDK_DIR, signal },
  );
  for (const entry of await readdir(outDir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile() || !entry.name.endsWith(".d.ts")) continue;
    const path = join(entry.parentPath, entry.name);
    const text = await readFile(path, "utf8");
    await writeFile(path, text.replace(/(["'])(\.{1,2}\/[^"'\n]*?)\.ts\1/g, "$1$2.js$1"));
  }
  await chmod(join(outDir, "cli", "workcell.js"), 0o755);
  return outDir;
}
