import { Writable } from "node:stream";
import pino, { type Logger } from "pino";
import { loggerOptions } from "../../shared/logging/safe-error-serializer.ts";

export type LogLine = Record<string, unknown> & { msg?: string; level?: number };

/** A real pino logger (the entries' options) whose JSON lines land in `lines`, parsed. */
export function captureLogs(level = "info"): { logger: Logger; lines: LogLine[]; raw: string[] } {
  const lines: LogLine[] = [];
  const raw: string[] = [];
  let pending = "";
  const destination = new Writable({
    write(chunk: Buffer, _encoding, done) {
      pending += chunk.toString("utf8");
      let newline = pending.indexOf("\n");
      while (newline >= 0) {
        const line = pending.slice(0, newline);
        pending = pending.slice(newline + 1);
        raw.push(line);
        lines.push(JSON.parse(line) as LogLine);
        newline = pending.indexOf("\n");
      }
      done();
    },
  });
  return { logger: pino(loggerOptions(level), destination), lines, raw };
}
