import { type CliContext, EXIT, output, table, UsageError } from "../cli-context.ts";

/** `workcell skills`: the caller's visible skills. */
export async function skillsCommand(ctx: CliContext): Promise<number> {
  const items = await ctx.client().skills.list({ signal: ctx.signal });
  output(ctx, { items }, () => table(items.map((s) => [s.slug, s.kind, s.description])));
  return EXIT.ok;
}

const USAGE =
  "usage: workcell admin skills | grant <slug> <uid> | revoke <slug> <uid> | nodes | limits <uid> [key=value...]";

/** `workcell admin ...` (admin token). */
export async function adminCommand(ctx: CliContext): Promise<number> {
  const [sub, a, b, ...rest] = ctx.args;
  const admin = ctx.client().admin;
  const signal = ctx.signal;
  switch (sub) {
    case "skills": {
      const items = await admin.skills.list({ signal });
      output(ctx, { items }, () =>
        table([
          ["SLUG", "KIND", "GRANTS", "VERSION"],
          ...items.map((s) => [s.slug, s.kind, String(s.grant_count), s.content_hash.slice(0, 19)]),
        ]),
      );
      return EXIT.ok;
    }
    case "grant":
    case "revoke": {
      if (a === undefined || b === undefined) throw new UsageError(USAGE);
      if (sub === "grant") {
        const grant = await admin.skills.grant(a, b, { signal });
        output(ctx, grant, () => `granted ${a} to ${b} (${grant.projection})`);
      } else {
        await admin.skills.revoke(a, b, { signal });
        output(ctx, { slug: a, uid: b, revoked: true }, () => `revoked ${a} from ${b}`);
      }
      return EXIT.ok;
    }
    case "nodes": {
      const items = await admin.nodes({ signal });
      output(ctx, { items }, () =>
        table([
          ["NODE", "STATE", "HEARTBEAT", "SANDBOXES", "RUNS"],
          ...items.map((n) => [
            n.node_id,
            n.state,
            n.heartbeat_at,
            String(n.live_sandboxes),
            String(n.running_runs),
          ]),
        ]),
      );
      return EXIT.ok;
    }
    case "limits": {
      if (a === undefined) throw new UsageError(USAGE);
      const updates = [b, ...rest].filter((x): x is string => x !== undefined);
      const limits =
        updates.length === 0
          ? await admin.limits(a, { signal })
          : await admin.setLimits(a, parseLimits(updates), { signal });
      output(ctx, limits, () =>
        table(Object.entries(limits ?? {}).map(([k, v]) => [k, String(v)])),
      );
      return EXIT.ok;
    }
    default:
      throw new UsageError(USAGE);
  }
}

function parseLimits(pairs: readonly string[]): Record<string, number> {
  const limits: Record<string, number> = {};
  for (const pair of pairs) {
    const match = /^([a-z_]+)=(\d+)$/.exec(pair);
    if (!match?.[1] || !match[2]) {
      throw new UsageError(`'${pair}' is not key=number, e.g. max_concurrent_runs=2`);
    }
    limits[match[1]] = Number(match[2]);
  }
  return limits;
}
