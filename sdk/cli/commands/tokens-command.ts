import type { TokenScope } from "../../src/index.ts";
import { type CliContext, EXIT, listOutput, output, table, UsageError } from "../cli-context.ts";

const SCOPES: readonly TokenScope[] = ["runs", "files", "admin"];

/** `workcell tokens create <name> [--scope s]... [--expires-days n] | list | revoke <id>` */
export async function tokensCommand(ctx: CliContext): Promise<number> {
  const [sub = "list", arg] = ctx.args;
  const tokens = ctx.client().tokens;
  const signal = ctx.signal;
  if (sub === "list" || sub === "ls") {
    const items = await tokens.list({ signal });
    listOutput(
      ctx,
      { items },
      () =>
        table([
          ["TOKEN", "NAME", "SCOPES", "EXPIRES", "LAST USED", "STATE"],
          ...items.map((t) => [
            t.token_id,
            t.name,
            t.scopes.join(","),
            t.expires_at ?? "never",
            t.last_used_at ?? "never",
            t.revoked_at !== null ? "revoked" : expired(t.expires_at) ? "expired" : "active",
          ]),
        ]),
      "No personal access tokens: 'workcell tokens create <name>' makes one.",
    );
    return EXIT.ok;
  }
  if (sub === "create") {
    if (arg === undefined)
      throw new UsageError(
        "usage: workcell tokens create <name> [--scope runs|files|admin ...] [--expires-days N]",
      );
    const created = await tokens.create(arg, { signal, ...scopesOf(ctx), ...daysOf(ctx) });
    if (ctx.json) output(ctx, created, () => "");
    else {
      // The token alone on stdout (for `$(workcell tokens create ci)`), the rest on stderr.
      ctx.io.stdout(`${created.token}\n`);
      ctx.io.stderr(
        `token ${created.token_id} (${created.scopes.join(", ")}; expires ${created.expires_at ?? "never"}): shown this once, store it now\n`,
      );
    }
    return EXIT.ok;
  }
  if (sub === "revoke") {
    if (arg === undefined) throw new UsageError("usage: workcell tokens revoke <token_id>");
    await tokens.revoke(arg, { signal });
    output(ctx, { revoked: arg }, () => `revoked ${arg}: it stops working on its next request`);
    return EXIT.ok;
  }
  throw new UsageError("usage: workcell tokens create <name> | list | revoke <token_id>");
}

function scopesOf(ctx: CliContext): { scopes?: TokenScope[] } {
  const given = ctx.flags.scope;
  if (given === undefined) return {};
  const list = (Array.isArray(given) ? given : [String(given)]).flatMap((s) => s.split(","));
  for (const scope of list) {
    if (!SCOPES.includes(scope as TokenScope)) {
      throw new UsageError(`--scope takes runs, files or admin (not '${scope}')`);
    }
  }
  return { scopes: [...new Set(list)] as TokenScope[] };
}

function daysOf(ctx: CliContext): { expiresInDays?: number } {
  const given = ctx.flags["expires-days"];
  if (given === undefined) return {};
  const days = Number(given);
  if (!Number.isInteger(days) || days < 1 || days > 366) {
    throw new UsageError("--expires-days takes a whole number of days from 1 to 366");
  }
  return { expiresInDays: days };
}

function expired(expiresAt: string | null): boolean {
  return expiresAt !== null && Date.parse(expiresAt) <= Date.now();
}
