import { z } from "zod";
import { EnvError, type EnvProblem } from "./env-error.ts";

/** What `process.env` or a Workers `env` binding looks like. */
export type EnvRecord = Readonly<Record<string, unknown>>;

/**
 * Parses an environment record with a deployable's schema and returns the typed result,
 * or throws one EnvError naming every bad variable and how to fix it.
 *
 * An empty string counts as unset: `FOO=` in a .env file or an empty CI secret should
 * fall back to the default or be reported as missing, not fail as "invalid URL".
 * Messages never quote values: most of these variables are secrets.
 */
export function parseEnv<S extends z.ZodType>(schema: S, record: EnvRecord): z.output<S> {
  const input: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(record)) {
    if (value !== "" && value !== undefined) input[name] = value;
  }
  const result = schema.safeParse(input);
  if (result.success) return result.data;
  throw new EnvError(envProblems(schema, input, result.error));
}

function envProblems(
  schema: z.ZodType,
  input: Record<string, unknown>,
  error: z.ZodError,
): EnvProblem[] {
  const shape = objectShape(schema);
  const messages = new Map<string, string[]>();
  for (const issue of error.issues) {
    const variable = issue.path.length > 0 ? String(issue.path[0]) : "(environment)";
    const text =
      !Object.hasOwn(input, variable) && issue.code === "invalid_type"
        ? "is not set"
        : issue.message;
    const list = messages.get(variable) ?? [];
    if (!list.includes(text)) list.push(text);
    messages.set(variable, list);
  }
  return [...messages].map(([variable, texts]) => {
    const description = shape?.[variable]?.description;
    const fix = description === undefined ? "" : ` Expected: ${description}`;
    return { variable, message: `${texts.join("; ")}.${fix}` };
  });
}

// Env schemas are objects, possibly wrapped in a transform (functionsEnvSchema).
function objectShape(schema: z.core.$ZodType): Readonly<Record<string, z.ZodType>> | undefined {
  if (schema instanceof z.ZodObject) return schema.shape;
  if (schema instanceof z.ZodPipe) return objectShape(schema.in);
  return undefined;
}
