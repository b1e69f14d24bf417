#!/usr/bin/env node
// The `workcell` CLI on the SDK. Ctrl-C aborts the command in flight (a run keeps going
// on the server: `workcell cancel` stops it).
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
      },
      stop.signal,
    );
  } finally {
    process.off("SIGINT", onSigint);
  }
}

if (import.meta.main) process.exitCode = await main(process.argv.slice(2));
