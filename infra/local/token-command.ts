import { readFile } from "node:fs/promises";
import { resolve } from "node:path";
import { parseArgs } from "node:util";
import { DEFAULT_LOCAL_DATA_DIR } from "../../shared/env/local-env.ts";
import { mintDevToken } from "./dev-token.ts";
import { type LocalSecrets, localSecretsPath } from "./local-secrets.ts";

export const TOKEN_USAGE = `usage: npm run token -- <uid> [--admin] [--data-dir <dir>]

Prints a dev token for <uid>, signed with the local Workcell's secret in
<dir>/secrets.json. <dir> is --data-dir, else DATA_DIR (the same setting the local
Workcell reads), else ${DEFAULT_LOCAL_DATA_DIR}. --admin adds the admin claim (skill grants, nodes).`;

/** What the command prints and its exit code; it never throws for a user's mistake. */
export type TokenCommandResult = { code: number; stdout?: string; stderr?: string };

/**
 * `npm run token`: the token of a uid for the local Workcell whose data is at the data
 * directory. Refuses (with usage, not a stack trace) --help, bad options, no uid, and a
 * data directory without secrets (never creates them: a token of a Workcell that never
 * ran would match none that runs later by chance only).
 */
export async function tokenCommand(
  argv: readonly string[],
  env: Readonly<Record<string, string | undefined>>,
): Promise<TokenCommandResult> {
  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse(argv);
  } catch (error) {
    return { code: 2, stderr: `${(error as Error).message}\n\n${TOKEN_USAGE}` };
  }
  if (parsed.values.help) return { code: 0, stdout: TOKEN_USAGE };
  const uid = parsed.positionals[0];
  if (uid === undefined || parsed.positionals.length > 1) return { code: 2, stderr: TOKEN_USAGE };
  const dataDir = resolve(parsed.values["data-dir"] ?? env.DATA_DIR ?? DEFAULT_LOCAL_DATA_DIR);
  const path = localSecretsPath(dataDir);
  let secrets: LocalSecrets;
  try {
    secrets = JSON.parse(await readFile(path, "utf8")) as LocalSecrets;
  } catch (error) {
    const missing = (error as NodeJS.ErrnoException).code === "ENOENT";
    return {
      code: 1,
      stderr: missing
        ? `No local Workcell data at ${dataDir} (${path} is missing): start it first (bash scripts/local.sh or npm start), with the same DATA_DIR, or pass --data-dir.\n\n${TOKEN_USAGE}`
        : `Could not read ${path}: ${(error as Error).message}`,
    };
  }
  const admin = parsed.values.admin ?? false;
  return { code: 0, stdout: await mintDevToken(secrets.devJwtSecret, uid, { admin }) };
}

function parse(argv: readonly string[]) {
  return parseArgs({
    args: [...argv],
    allowPositionals: true,
    options: {
      admin: { type: "boolean" },
      help: { type: "boolean", short: "h" },
      "data-dir": { type: "string" },
    },
  });
}
