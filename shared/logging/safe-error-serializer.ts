import { stdSerializers } from "pino";
import { jsonConsoleWrite } from "./json-console-write.ts";

/** What a failed query's message becomes in a log line. */
export const WITHHELD_QUERY_MESSAGE = "Failed query (SQL text and bound parameters withheld)";

/**
 * Properties that carry SQL text or bound values: drizzle's DrizzleQueryError (`query`,
 * `params`), postgres.js errors in debug mode (`query`, `parameters`, `args`).
 */
const QUERY_PROPERTIES = new Set(["query", "params", "parameters", "args"]);
const MAX_CAUSE_DEPTH = 5;

/**
 * pino's `err` serializer minus everything that can hold bound SQL values. A failed
 * query's message and stack embed the SQL and every parameter (a thread title, a run's
 * whole input, a uid): none of that may reach a log line, so the message is replaced and
 * the stack keeps only its frames. The database's own error (code, constraint, detail-free
 * message) stays, because that is what an operator needs.
 */
export function safeErrorSerializer(err: unknown): unknown {
  return redact(err, 0);
}

function redact(err: unknown, depth: number): unknown {
  if (!(err instanceof Error)) return err;
  const serialized = stdSerializers.err(err) as unknown as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  const isQueryError = "query" in err && ("params" in err || "parameters" in err);
  for (const [key, value] of Object.entries(serialized)) {
    if (QUERY_PROPERTIES.has(key) || key === "cause") continue;
    // pino's browser build (Workers) names the message `msg`: one name on every runtime,
    // and the withheld message below replaces it there too.
    out[key === "msg" ? "message" : key] = value;
  }
  if (isQueryError) {
    out.message = WITHHELD_QUERY_MESSAGE;
    out.stack = framesOnly(err.stack);
  }
  const cause = (err as { cause?: unknown }).cause;
  if (cause !== undefined && depth < MAX_CAUSE_DEPTH) out.cause = redact(cause, depth + 1);
  // A driver error can echo the value too ("invalid byte sequence ... 0x00" does not, but
  // `detail` of a constraint violation does: "Key (title)=(...) already exists").
  if ("detail" in out) out.detail = "(withheld)";
  return out;
}

function framesOnly(stack: string | undefined): string | undefined {
  if (stack === undefined) return undefined;
  const frames = stack.split("\n").filter((line) => line.trimStart().startsWith("at "));
  return [WITHHELD_QUERY_MESSAGE, ...frames].join("\n");
}

/**
 * Options every entry's root logger is created with: the level and the safe serializer.
 * `browser` is read only by pino's browser build, the one bundled for Cloudflare Workers:
 * there serializers run only when asked for (`serialize`), and each line is written as
 * JSON (jsonConsoleWrite) rather than as console objects (docs/decisions/0078).
 */
export function loggerOptions(level: string): {
  level: string;
  serializers: { err: typeof safeErrorSerializer };
  browser: { asObject: true; serialize: true; write: typeof jsonConsoleWrite };
} {
  return {
    level,
    serializers: { err: safeErrorSerializer },
    browser: { asObject: true, serialize: true, write: jsonConsoleWrite },
  };
}
