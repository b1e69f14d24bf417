import { execFile } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";

const REPO = join(import.meta.dirname, "../../..");
const SDK = join(REPO, "sdk");
/** npm pack (with its tsc build) and npm install on a loaded machine: minutes, never hours. */
const STEP_TIMEOUT_MS = 240_000;

export type Ran = { code: number; stdout: string; stderr: string };

/** A command with a deadline; its exit code, never a throw (a test asserts on it). */
export function runIn(
  cwd: string,
  command: string,
  args: readonly string[],
  env: NodeJS.ProcessEnv = process.env,
): Promise<Ran> {
  return new Promise((done) => {
    execFile(
      command,
      [...args],
      { cwd, env, signal: AbortSignal.timeout(STEP_TIMEOUT_MS), maxBuffer: 16 << 20 },
      (error, stdout, stderr) => {
        const code = error === null ? 0 : typeof error.code === "number" ? error.code : -1;
        done({ code, stdout, stderr });
      },
    );
  });
}

/** The first fenced block of `language` in sdk/README.md: the quick start, verbatim. */
export async function readmeBlock(language: string): Promise<string> {
  const readme = await readFile(join(SDK, "README.md"), "utf8");
  const block = new RegExp(`\`\`\`${language}\\n([\\s\\S]*?)\`\`\``).exec(readme)?.[1];
  if (block === undefined) throw new Error(`sdk/README.md has no \`\`\`${language} block`);
  return block;
}

/**
 * An empty project outside the repository (no node_modules of ours above it) with the SDK
 * as a user gets it: `npm pack` of sdk/ (its prepack builds dist/), then `npm install` of
 * that tarball and @types/node, from the npm cache or the registry.
 */
export async function projectWithPackedSdk(): Promise<{ dir: string; remove(): Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), "workcell-sdk-user-"));
  const remove = () => rm(dir, { recursive: true, force: true });
  try {
    const packed = await runIn(SDK, "npm", ["pack", "--json", "--pack-destination", dir]);
    if (packed.code !== 0) throw new Error(`npm pack failed:\n${packed.stderr}`);
    const [{ filename }] = JSON.parse(packed.stdout.slice(packed.stdout.indexOf("["))) as [
      { filename: string },
    ];
    await writeFile(
      join(dir, "package.json"),
      JSON.stringify({ name: "sdk-user", private: true, type: "module" }),
    );
    const installed = await runIn(dir, "npm", [
      "install",
      "--no-audit",
      "--no-fund",
      "--prefer-offline",
      `./${filename}`,
      "@types/node@24",
    ]);
    if (installed.code !== 0) throw new Error(`npm install failed:\n${installed.stderr}`);
    return { dir, remove };
  } catch (error) {
    await remove();
    throw error;
  }
}

/** The repository's TypeScript compiler, run in the user's project (a tool, not a dependency). */
export const TSC = join(REPO, "node_modules/typescript/bin/tsc");
