import type { Run, RunEvent } from "../../src/index.ts";
import { type CliContext, UsageError } from "../cli-context.ts";

/** `--ask bash,write_file` or `--ask all`: the run's calls of those tools wait for you. */
export function askFlag(value: unknown): { tools: string[] | "all" } | undefined {
  if (typeof value !== "string") return undefined;
  if (value === "all") return { tools: "all" };
  const tools = value
    .split(",")
    .map((t) => t.trim())
    .filter((t) => t !== "");
  if (tools.length === 0) throw new UsageError("--ask takes tool names (bash,write_file) or all");
  return { tools };
}

/**
 * A run's `approval.requested` while `workcell run` follows it: the call and its exact
 * arguments on stderr; on a terminal the person decides right there (y: once, r: for the
 * rest of the run, anything else: deny), else the command to decide it later.
 */
export async function askApproval(
  ctx: CliContext,
  run: Run,
  event: RunEvent & { type: "approval.requested" },
): Promise<void> {
  const { approval_id: id, tool, arguments: args, kind, host, port } = event.data;
  const what =
    kind === "network"
      ? `a connection to ${host ?? "?"}:${port ?? "?"}`
      : `${tool ?? "?"} ${JSON.stringify(args)}`;
  ctx.io.stderr(`\napproval needed: ${what}\n`);
  const stdin = ctx.io.stdin;
  if (stdin?.isTTY !== true) {
    ctx.io.stderr(`waiting: decide with 'workcell approve ${id} --run ${run.id}' (or --deny)\n`);
    return;
  }
  ctx.io.stderr("Approve? [y]es once, [r] for the rest of the run, [N]o: ");
  const answer = (await stdin.readLine()).trim().toLowerCase();
  const approval = (await run.approvals({ signal: ctx.signal })).find((a) => a.id === id);
  if (approval === undefined) return;
  if (answer === "y" || answer === "yes" || answer === "r") {
    await approval.approve({ signal: ctx.signal, scope: answer === "r" ? "run" : "once" });
    ctx.io.stderr("approved\n");
  } else {
    await approval.deny({ signal: ctx.signal, note: "denied at the terminal" });
    ctx.io.stderr("denied\n");
  }
}
