import type { NodeRuntimeData } from "../../src/index.ts";
import { type CliContext, EXIT, listOutput, output, table, UsageError } from "../cli-context.ts";
import { limitsCommand } from "./limits-command.ts";
import { networkCommand } from "./network-command.ts";

/** `workcell skills`: the caller's visible skills. */
export async function skillsCommand(ctx: CliContext): Promise<number> {
  const items = await ctx.client().skills.list({ signal: ctx.signal });
  listOutput(
    ctx,
    { items },
    () => table(items.map((s) => [s.slug, s.kind, s.description])),
    "No skills visible to you yet: an admin grants them (workcell admin grant <slug> <uid>).",
  );
  return EXIT.ok;
}

const USAGE =
  "usage: workcell admin skills | grant <slug> <uid> | revoke <slug> <uid> | nodes | runtime | limits <uid> [name=value|name=default ...] | network <uid> [none|host,host...]";

const NO_NODES =
  "No agent-host has registered: start one (docs/deploy/nodes.md) or check its DATABASE_URL.";

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
      listOutput(
        ctx,
        { items },
        () =>
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
        NO_NODES,
      );
      return EXIT.ok;
    }
    case "runtime": {
      const items = await admin.runtime({ signal });
      listOutput(ctx, { items }, () => runtimeTable(items), NO_NODES);
      return EXIT.ok;
    }
    case "limits": {
      if (a === undefined) throw new UsageError(USAGE);
      const updates = [b, ...rest].filter((x): x is string => x !== undefined);
      return limitsCommand(ctx, a, updates);
    }
    case "network": {
      if (a === undefined) throw new UsageError(USAGE);
      return networkCommand(ctx, a, b);
    }
    default:
      throw new UsageError(USAGE);
  }
}

/** One line per node and tier, then one per Runtime Asset that is not ready. */
function runtimeTable(items: readonly NodeRuntimeData[]): string {
  const rows = [["NODE", "STATE", "TIER / ASSETS", "READY", "DETAIL"]];
  for (const node of items) {
    for (const tier of node.sandbox_tiers) {
      rows.push([node.node_id, node.state, tier.tier, tier.ready ? "yes" : "no", tier.detail]);
    }
    rows.push([
      node.node_id,
      node.state,
      "egress proxy",
      node.egress_proxy.state === "ready" ? "yes" : "no",
      node.egress_proxy.detail,
    ]);
    const assets = node.runtime_assets;
    const broken = assets.assets.filter((x) => !x.ready);
    rows.push([
      node.node_id,
      node.state,
      `assets ${assets.version}`,
      assets.state === "verified" && broken.length === 0 ? "yes" : "no",
      assets.error ??
        (assets.state !== "verified"
          ? assets.state
          : `${assets.assets.length - broken.length}/${assets.assets.length} ready`),
    ]);
    for (const asset of broken) {
      rows.push([
        node.node_id,
        node.state,
        `  ${asset.name} ${asset.version}`,
        "no",
        asset.reason ?? "",
      ]);
    }
  }
  return table(rows);
}
