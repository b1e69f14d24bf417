import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { asc, eq } from "drizzle-orm";
import { decideApproval } from "../../../functions/approvals/approval-store.ts";
import type { ApprovalDecision } from "../../../shared/contracts/approval.ts";
import { type RunApprovalRow, runApprovals } from "../../../shared/db/schema.ts";
import { uidDirname } from "../../../shared/paths/uid-dirname.ts";
import type { Project, RunWorld } from "../runs/run-harness.ts";

/** The shell model's command that leaves one line per execution in outputs/effect.txt. */
export const EFFECT_COMMAND = "mkdir -p outputs && echo ran >> outputs/effect.txt && echo done";

export function effectFile(world: RunWorld, project: Project): string {
  return join(
    world.dataRoot.path,
    "users",
    uidDirname(project.uid),
    "workspace",
    project.workdirPath,
    "outputs",
    "effect.txt",
  );
}

/** How many times the command ran: lines of its side-effect file (absent: 0). */
export function effectCount(world: RunWorld, project: Project): number {
  const path = effectFile(world, project);
  if (!existsSync(path)) return 0;
  return readFileSync(path, "utf8")
    .split("\n")
    .filter((l) => l === "ran").length;
}

export async function approvalsOf(world: RunWorld, runId: string): Promise<RunApprovalRow[]> {
  return world.db
    .select()
    .from(runApprovals)
    .where(eq(runApprovals.runId, runId))
    .orderBy(asc(runApprovals.requestedAt));
}

/** The run paused: it is awaiting_approval with one pending approval, which is returned. */
export async function awaitPause(world: RunWorld, runId: string): Promise<RunApprovalRow> {
  await world.waitForRun(runId, (run) => run.status === "awaiting_approval");
  const pending = (await approvalsOf(world, runId)).filter((a) => a.status === "pending");
  if (pending.length !== 1) throw new Error(`expected one pending approval, got ${pending.length}`);
  return pending[0] as RunApprovalRow;
}

/**
 * The control plane's decision (the route's store call). Nothing is sent on the queue: the
 * decision puts the run in line and wakes the nodes in its transaction (decision 0173).
 */
export async function decide(
  world: RunWorld,
  uid: string,
  approval: Pick<RunApprovalRow, "runId" | "approvalId">,
  decision: ApprovalDecision,
): Promise<RunApprovalRow> {
  return decideApproval(
    world.db,
    uid,
    { runId: approval.runId, approvalId: approval.approvalId },
    decision,
  );
}
