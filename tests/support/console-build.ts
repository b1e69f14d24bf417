import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { build } from "vite";

const repo = join(import.meta.dirname, "../..");

/** A production build of web/ from the current sources into a fresh directory. */
export async function buildConsole(): Promise<{ dir: string; remove(): Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), "workcell-web-"));
  await build({
    configFile: join(repo, "web/vite.config.ts"),
    logLevel: "warn",
    build: { outDir: dir, emptyOutDir: true, sourcemap: false },
  });
  return { dir, remove: () => rm(dir, { recursive: true, force: true }) };
}
