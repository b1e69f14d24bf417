/**
 * The default branch of an exhaustive switch: it does not compile while a case is
 * missing, and throws if a value outside the type arrives anyway (a newer peer, a bad
 * cast). `what` names the union for the message ("run status").
 */
export function assertNever(value: never, what: string): never {
  const shown = typeof value === "object" ? JSON.stringify(value) : String(value);
  throw new Error(`unhandled ${what}: ${shown}`);
}
