import { type CliContext, EXIT, listOutput, output, table, UsageError } from "../cli-context.ts";

const USAGE =
  "usage: workcell secrets set <NAME> --host <pattern> [--host ...] [--header H] [--template 'Bearer {value}'] < value\n       workcell secrets list | rm <NAME>";

/**
 * `workcell secrets set NAME --host api.github.com` (the value from stdin, never an
 * argument: argv is visible to other processes and kept in shell history) | list | rm.
 */
export async function secretsCommand(ctx: CliContext): Promise<number> {
  const [sub = "list", name] = ctx.args;
  const secrets = ctx.client().secrets;
  const signal = ctx.signal;
  if (sub === "list" || sub === "ls") {
    const items = await secrets.list({ signal });
    listOutput(
      ctx,
      { items },
      () =>
        table([
          ["NAME", "HOSTS", "HEADER", "TEMPLATE", "UPDATED"],
          ...items.map((s) => [s.name, s.hosts.join(","), s.header, s.template, s.updated_at]),
        ]),
      "No secrets: 'workcell secrets set NAME --host HOST' stores one (value on stdin).",
    );
    return EXIT.ok;
  }
  if (sub === "set") {
    if (name === undefined) throw new UsageError(USAGE);
    const hosts = listFlag(ctx.flags.host);
    if (hosts.length === 0) throw new UsageError(`--host is required\n${USAGE}`);
    const stdin = ctx.io.stdin;
    if (stdin === undefined) throw new UsageError(USAGE);
    if (stdin.isTTY) ctx.io.stderr(`Value of ${name} (not echoed back anywhere), then Enter: `);
    const value = (await stdin.readLine()).replace(/\r?\n$/, "");
    if (value === "") throw new UsageError("the value (on stdin) is empty");
    const header = ctx.flags.header;
    const template = ctx.flags.template;
    const saved = await secrets.set(name, value, {
      signal,
      hosts,
      ...(typeof header === "string" ? { header } : {}),
      ...(typeof template === "string" ? { template } : {}),
    });
    output(
      ctx,
      saved,
      () =>
        `stored ${saved.name} for ${saved.hosts.join(", ")} (${saved.header}: ${saved.template}); sandboxes see a placeholder in $${saved.name}`,
    );
    return EXIT.ok;
  }
  if (sub === "rm" || sub === "delete") {
    if (name === undefined) throw new UsageError(USAGE);
    await secrets.delete(name, { signal });
    output(ctx, { deleted: name }, () => `deleted ${name}: the proxy stops sending it now`);
    return EXIT.ok;
  }
  throw new UsageError(USAGE);
}

function listFlag(given: unknown): string[] {
  if (given === undefined) return [];
  return (Array.isArray(given) ? given : [String(given)])
    .flatMap((text) => String(text).split(","))
    .map((text) => text.trim())
    .filter((text) => text.length > 0);
}
