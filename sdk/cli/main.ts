#!/usr/bin/env node
// The `workcell` CLI on the SDK. Ctrl-C aborts the command in flight (a run keeps going
// on the server: `workcell cancel` stops it).
import { createInterface } from "node:readline";
import { runCli } from "./run-cli.ts";

export async function main(argv: readonly string[]): Promise<number> {
  const stop = new AbortController();
  const onSigint = () => stop.abort(new Error("interrupted"));
  process.once("SIGINT", onSigint);
  try {
    return await runCli(
      argv,
      {
        stdout: (text) => process.stdout.write(text),
        stderr: (text) => process.stderr.write(text),
        env: process.env,
        stdoutIsTerminal: process.stdout.isTTY === true,
        stdin: {
          isTTY: process.stdin.isTTY === true,
          readLine: () => firstLine(stop.signal),
        },
      },
      stop.signal,
    );
  } finally {
    process.off("SIGINT", onSigint);
  }
}

/** One line of standard input ("" at its end), without echoing anything of it back. */
async function firstLine(signal: AbortSignal): Promise<string> {
  const lines = createInterface({ input: process.stdin, terminal: false, crlfDelay: Infinity });
  try {
    for await (const line of lines) {
      if (signal.aborted) break;
      return line;
    }
    return "";
  } finally {
    lines.close();
  }
}

if (import.meta.main) process.exitCode = await main(process.argv.slice(2));
