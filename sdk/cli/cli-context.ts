import { Workcell } from "../src/index.ts";
import { type CliConfig, saveConfig } from "./cli-config.ts";

/** Where a command writes; tests pass buffers, `main.ts` the process streams. */
export type CliIo = {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  env: NodeJS.ProcessEnv;
  /** True when stdout is a terminal (then a reply is not printed twice: reply-echo-filter.ts). */
  stdoutIsTerminal?: boolean;
  /** Where `workcell login` reads a pasted token; absent in tests that paste nothing. */
  stdin?: { readonly isTTY: boolean; readLine(): Promise<string> };
};

/**
 * Exit codes: 0 ok, 1 the run or request failed, 2 usage, 130 the run was cancelled or the
 * command interrupted (128 + SIGINT, as a shell reports Ctrl-C). `workcell run` with the
 * shell model exits with the command's own code instead of 0 (run-outcome.ts).
 */
export const EXIT = { ok: 0, failed: 1, usage: 2, cancelled: 130 } as const;

export class UsageError extends Error {
  override name = "UsageError";
}

/** What every command gets: parsed flags, output, the client, and the stored state. */
export type CliContext = {
  io: CliIo;
  json: boolean;
  args: string[];
  flags: Record<string, string | boolean | string[] | undefined>;
  config: CliConfig;
  configFile: string;
  /** The client from --url/--token, WORKCELL_BASE_URL/WORKCELL_TOKEN, then the login. */
  client(): Workcell;
  remember(update: Partial<CliConfig>): Promise<void>;
  /** --thread, else the last run's thread, else a usage error. */
  threadId(): string;
  signal: AbortSignal;
};

export function createContext(p: {
  io: CliIo;
  args: string[];
  flags: Record<string, string | boolean | string[] | undefined>;
  config: CliConfig;
  configFile: string;
  signal: AbortSignal;
}): CliContext {
  const flag = (name: string) => {
    const value = p.flags[name];
    return typeof value === "string" ? value : undefined;
  };
  const context: CliContext = {
    io: p.io,
    json: p.flags.json === true,
    args: p.args,
    flags: p.flags,
    config: p.config,
    configFile: p.configFile,
    signal: p.signal,
    client() {
      // An empty variable counts as unset (`WORKCELL_TOKEN= workcell ...`).
      const baseUrl = flag("url") || p.io.env.WORKCELL_BASE_URL || p.config.base_url;
      const token = flag("token") || p.io.env.WORKCELL_TOKEN || p.config.token;
      if (token === undefined) {
        throw new UsageError(
          "Not logged in: run 'workcell login --url <api> --token <token>' (or set WORKCELL_TOKEN).",
        );
      }
      return new Workcell({ token, ...(baseUrl === undefined ? {} : { baseUrl }) });
    },
    async remember(update) {
      Object.assign(p.config, update);
      await saveConfig(p.configFile, p.config);
    },
    threadId() {
      const id = flag("thread") ?? p.config.last_thread_id;
      if (id === undefined) {
        throw new UsageError("No thread: pass --thread <id>, or start one with 'workcell run'.");
      }
      return id;
    },
  };
  return context;
}

/** Prints `value` as JSON (--json) or as the human text `human` returns. */
export function output(ctx: CliContext, value: unknown, human: () => string): void {
  if (ctx.json) ctx.io.stdout(`${JSON.stringify(value)}\n`);
  else {
    const text = human();
    if (text.length > 0) ctx.io.stdout(text.endsWith("\n") ? text : `${text}\n`);
  }
}

/**
 * A list: JSON as `value`, or the human table; an empty list says so on stderr (an empty
 * stdout stays empty for pipes) and what to do about it.
 */
export function listOutput(
  ctx: CliContext,
  value: { items: readonly unknown[] },
  human: () => string,
  emptyNote: string,
): void {
  if (!ctx.json && value.items.length === 0) ctx.io.stderr(`${emptyNote}\n`);
  else output(ctx, value, human);
}

/** Left-aligned columns, for lists. */
export function table(rows: readonly (readonly string[])[]): string {
  const widths: number[] = [];
  for (const row of rows) {
    row.forEach((cell, i) => {
      widths[i] = Math.max(widths[i] ?? 0, cell.length);
    });
  }
  return rows
    .map((row) =>
      row.map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i] ?? 0))).join("  "),
    )
    .join("\n");
}
