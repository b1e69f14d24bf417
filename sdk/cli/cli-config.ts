import { chmod, mkdir, readFile, rename, writeFile } from "node:fs/promises";
import { homedir } from "node:os";
import { dirname, join } from "node:path";

/** What `workcell login` stores, and what `run` remembers for the next command. */
export type CliConfig = {
  base_url?: string;
  token?: string;
  /** The thread of the last `workcell run`: the default of files/attach/changes. */
  last_thread_id?: string;
  last_run_id?: string;
};

/** WORKCELL_CONFIG, else $XDG_CONFIG_HOME/workcell/config.json, else ~/.config/workcell/config.json. */
export function configPath(env: NodeJS.ProcessEnv): string {
  if (env.WORKCELL_CONFIG) return env.WORKCELL_CONFIG;
  const base = env.XDG_CONFIG_HOME || join(homedir(), ".config");
  return join(base, "workcell", "config.json");
}

export async function loadConfig(path: string): Promise<CliConfig> {
  try {
    return JSON.parse(await readFile(path, "utf8")) as CliConfig;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return {};
    throw new Error(`Cannot read ${path}: fix or delete it, then run 'workcell login' again.`);
  }
}

/** Writes atomically with mode 0600: the file holds a bearer token. */
export async function saveConfig(path: string, config: CliConfig): Promise<void> {
  await mkdir(dirname(path), { recursive: true, mode: 0o700 });
  const temp = `${path}.${process.pid}.tmp`;
  await writeFile(temp, `${JSON.stringify(config, null, 2)}\n`, { mode: 0o600 });
  await chmod(temp, 0o600);
  await rename(temp, path);
}
