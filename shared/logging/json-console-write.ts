/** A log object as pino's browser build hands it to `browser.write` (asObject). */
type LogObject = object;

/**
 * pino's `browser.write`: where its browser build (the one bundlers pick for Cloudflare
 * Workers, where there is no stdout stream) sends each line. Without it pino passes its
 * arguments to `console.*` as objects, which wrangler and `wrangler tail` print as
 * util.inspect text (nested objects cut to `[Object]`, keys unquoted), so a metrics line
 * (0031) loses its labels and nothing can parse a request line. Here each line is one JSON
 * string, the same shape as the Node build's (`level`, `time`, `msg` and the fields), and
 * the console method follows the level so Workers Logs records it.
 */
export const jsonConsoleWrite = {
  fatal: (o: LogObject) => console.error(jsonLine(o)),
  error: (o: LogObject) => console.error(jsonLine(o)),
  warn: (o: LogObject) => console.warn(jsonLine(o)),
  // Not console.log: wrangler prints that only at its `log` level, below `info`.
  info: (o: LogObject) => console.info(jsonLine(o)),
  debug: (o: LogObject) => console.debug(jsonLine(o)),
  trace: (o: LogObject) => console.debug(jsonLine(o)),
};

function jsonLine(o: LogObject): string {
  const seen = new WeakSet<object>();
  // Like the Node build's safe-stable-stringify: a cycle or a BigInt never drops the line.
  return JSON.stringify(o, (_key, value: unknown) => {
    if (typeof value === "bigint") return value.toString();
    if (typeof value === "object" && value !== null) {
      if (seen.has(value)) return "[Circular]";
      seen.add(value);
    }
    return value;
  });
}
