import { setTimeout as sleep } from "node:timers/promises";
import { and, eq, sql } from "drizzle-orm";
import type { Logger } from "pino";
import { approvalBody } from "../../shared/approvals/approval-body.ts";
import { abortable } from "../../shared/async/abortable.ts";
import { agentOptionsSchema } from "../../shared/contracts/run.ts";
import type { Db } from "../../shared/db/client.ts";
import {
  type AgentRun,
  type RunApprovalRow,
  runApprovals,
  userApprovalPolicies,
} from "../../shared/db/schema.ts";
import type { NetworkAnswer, NetworkAsk } from "../egress/egress-decision.ts";

export interface NetworkApprovalsDeps {
  readonly db: Db;
  readonly runId: string;
  readonly uid: string;
  /** The sandbox generation the connection comes from (shown, informational). */
  readonly generation: number;
  readonly timeoutSeconds: number;
  /**
   * Appends the run's `approval.requested` / `approval.resolved`: through the run's own
   * event log, whose worker alone counts its seq (a row written beside it would take a seq
   * the log is about to use and end the run as lease_lost).
   */
  readonly emit: (type: string, data: unknown) => Promise<void>;
  readonly logger: Logger;
  /** Each database statement's deadline. */
  readonly dbTimeoutMs: number;
  /** How often the pending row is read for a decision; default 500 ms. */
  readonly pollMs?: number;
}

/**
 * How long a network approval of `run` waits, or undefined when its hosts do not ask
 * (`agent.approvals.network` off): its own timeout or the deployment's, never longer than
 * its user's admin policy allows (the same rule as a tool's, approval-policy.ts).
 */
export async function networkApprovalTimeout(
  db: Db,
  run: Pick<AgentRun, "uid" | "agent">,
  defaultTimeoutSeconds: number,
): Promise<number | undefined> {
  const agent = agentOptionsSchema.safeParse(run.agent);
  const own = agent.success ? agent.data.approvals : undefined;
  if (own?.network !== true) return undefined;
  const [admin] = await db
    .select({ max: userApprovalPolicies.maxTimeoutSeconds })
    .from(userApprovalPolicies)
    .where(eq(userApprovalPolicies.uid, run.uid));
  const wanted = own.timeout_seconds ?? defaultTimeoutSeconds;
  return Math.min(wanted, admin?.max ?? Number.POSITIVE_INFINITY);
}

/** A run's asks, and a wait for all of them to be closed (after its listener closed). */
export interface NetworkApprovals {
  readonly ask: NetworkAsk;
  settled(): Promise<void>;
}

const UNAVAILABLE: NetworkAnswer = {
  approved: false,
  reason: "approval_unavailable",
  note: "Workcell could not record or read the approval request (database); nothing was sent.",
};

/**
 * A run's network approvals (docs/architecture.md §14, decision 0137): the proxy calls this
 * for a host outside the run's narrowing; it stores a pending `network` approval, emits
 * `approval.requested`, and waits (bounded by the approval's timeout and by the connection)
 * until a person decides through the API. One approval asks at a time per run (the table
 * keeps one pending per run), so further connections wait their turn; a host approved with
 * scope `run` passes without asking for the rest of the run, also after a resume.
 */
export function createNetworkAsk(deps: NetworkApprovalsDeps): NetworkApprovals {
  const approvedForRun = new Set<string>();
  let turn: Promise<unknown> = Promise.resolve();
  return {
    ask: (host, port, signal) => {
      const asked = turn.then(() => askOnce(deps, approvedForRun, host, port, signal));
      turn = asked.catch(() => {});
      return asked.catch((error: unknown) => {
        deps.logger.warn({ err: error, run_id: deps.runId, host, port }, "network approval failed");
        return UNAVAILABLE;
      });
    },
    // Each ask's every statement is bounded, so this ends once their connections are gone.
    settled: () => turn.then(() => {}),
  };
}

async function askOnce(
  deps: NetworkApprovalsDeps,
  approvedForRun: Set<string>,
  host: string,
  port: number,
  signal: AbortSignal,
): Promise<NetworkAnswer> {
  const key = `${host}:${port}`;
  if (approvedForRun.has(key)) return { approved: true };
  if (signal.aborted) return closedAnswer();
  const bounded = () => AbortSignal.timeout(deps.dbTimeoutMs);
  if (await abortable(approvedBefore(deps, host, port), bounded(), "approval read")) {
    approvedForRun.add(key);
    return { approved: true };
  }
  const row = await abortable(insertPending(deps, host, port), bounded(), "approval insert");
  if (row === undefined) {
    return {
      approved: false,
      reason: "approval_busy",
      note: "Another approval of this run is pending.",
    };
  }
  const decided = await awaitDecision(deps, row, signal).catch(async (error: unknown) => {
    await abortable(
      closePending(deps, row, "denied", "Workcell could not wait for the decision."),
      bounded(),
    ).catch(() => {});
    throw error;
  });
  await deps
    .emit("approval.resolved", {
      approval_id: decided.approvalId,
      status: decided.status,
      ...(decided.decidedBy === null ? {} : { decided_by: decided.decidedBy }),
      ...(decided.note === null ? {} : { note: decided.note }),
    })
    .catch(() => {});
  if (decided.status === "approved") {
    if (decided.scope === "run") approvedForRun.add(key);
    return { approved: true };
  }
  if (decided.status === "expired")
    return {
      approved: false,
      reason: "approval_expired",
      note: `Nobody decided within ${deps.timeoutSeconds} s.`,
    };
  return {
    approved: false,
    reason: "approval_denied",
    note: `Denied by ${decided.decidedBy ?? "Workcell"}: ${decided.note ?? "no note"}.`,
  };
}

/** Stores the pending approval and emits `approval.requested`; undefined: one is pending. */
async function insertPending(
  deps: NetworkApprovalsDeps,
  host: string,
  port: number,
): Promise<RunApprovalRow | undefined> {
  const row = await deps.db.transaction(async (tx) => {
    // A pending network approval left by an earlier claim of this run: its connection is
    // gone (this worker's asks take turns, so none of ours is pending now).
    await tx
      .update(runApprovals)
      .set({
        status: "denied",
        decidedAt: sql`now()`,
        note: "The connection that asked is gone (the run was resumed).",
      })
      .where(
        and(
          eq(runApprovals.runId, deps.runId),
          eq(runApprovals.kind, "network"),
          eq(runApprovals.status, "pending"),
        ),
      );
    const [inserted] = await tx
      .insert(runApprovals)
      .values({
        runId: deps.runId,
        uid: deps.uid,
        kind: "network",
        status: "pending",
        host,
        port,
        generation: deps.generation,
        expiresAt: sql`now() + make_interval(secs => ${deps.timeoutSeconds})`,
      })
      .onConflictDoNothing()
      .returning();
    return inserted;
  });
  if (row === undefined) return undefined;
  try {
    await deps.emit("approval.requested", approvalBody(row));
  } catch (error) {
    // Nobody can see the request (the run's log is gone): close it, refuse the connection.
    await closePending(deps, row, "denied", "The run stopped before the request was shown.");
    throw error;
  }
  return row;
}

/** Reads the row until it is decided, expires here, or the connection goes (denied). */
async function awaitDecision(
  deps: NetworkApprovalsDeps,
  row: RunApprovalRow,
  signal: AbortSignal,
): Promise<RunApprovalRow> {
  const deadline = Date.now() + deps.timeoutSeconds * 1000;
  const pollMs = deps.pollMs ?? 500;
  for (;;) {
    const bounded = AbortSignal.timeout(deps.dbTimeoutMs);
    const [now] = await abortable(
      deps.db.select().from(runApprovals).where(eq(runApprovals.approvalId, row.approvalId)),
      bounded,
      "approval read",
    );
    if (now === undefined) throw new Error("the pending network approval vanished");
    if (now.status !== "pending") return now;
    const closing = signal.aborted
      ? ({ status: "denied", note: "The connection closed before a decision." } as const)
      : Date.now() >= deadline
        ? ({ status: "expired", note: null } as const)
        : undefined;
    if (closing !== undefined) {
      const closed = await abortable(
        closePending(deps, row, closing.status, closing.note),
        AbortSignal.timeout(deps.dbTimeoutMs),
        "approval close",
      );
      // Undefined: a person decided at that moment; the next read returns it.
      if (closed !== undefined) return closed;
      continue;
    }
    await sleep(Math.min(pollMs, Math.max(deadline - Date.now(), 0)), undefined, {
      signal,
    }).catch(() => {});
  }
}

/** Closes a still-pending approval as `status`; undefined when it was decided meanwhile. */
async function closePending(
  deps: NetworkApprovalsDeps,
  row: RunApprovalRow,
  status: "denied" | "expired",
  note: string | null,
): Promise<RunApprovalRow | undefined> {
  const [closed] = await deps.db
    .update(runApprovals)
    .set({ status, decidedAt: sql`now()`, note })
    .where(and(eq(runApprovals.approvalId, row.approvalId), eq(runApprovals.status, "pending")))
    .returning();
  return closed;
}

/** A person approved this host and port for the whole run (before a pause, on any node). */
async function approvedBefore(deps: NetworkApprovalsDeps, host: string, port: number) {
  const [row] = await deps.db
    .select({ id: runApprovals.approvalId })
    .from(runApprovals)
    .where(
      and(
        eq(runApprovals.runId, deps.runId),
        eq(runApprovals.kind, "network"),
        eq(runApprovals.status, "approved"),
        eq(runApprovals.scope, "run"),
        eq(runApprovals.host, host),
        eq(runApprovals.port, port),
      ),
    )
    .limit(1);
  return row !== undefined;
}

function closedAnswer(): NetworkAnswer {
  return {
    approved: false,
    reason: "approval_denied",
    note: "The connection closed before it was asked.",
  };
}
