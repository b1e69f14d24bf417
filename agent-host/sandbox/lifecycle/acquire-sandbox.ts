import type { DbTransaction } from "../../../shared/db/client.ts";
import { domainError } from "../../../shared/errors/domain-errors.ts";
import { WorkcellError } from "../../../shared/errors/workcell-error.ts";
import { DEFAULT_FILE_VIEW, type FileView } from "../../../shared/paths/file-view.ts";
import type { CreateRefusal, InstanceRef, SandboxInstance } from "../driver.ts";
import {
  handleFromRow,
  instanceOfRow,
  type SandboxHandle,
  sandboxHandle,
} from "../sandbox-handle.ts";
import type { SandboxTier } from "../sandbox-tier.ts";
import { type TmpfsBudgetRefusal, tmpfsBudgetError } from "../tmpfs-budget.ts";
import {
  type AcquireDecision,
  type DecidedRefusal,
  decideAcquire,
  type NodeView,
} from "./decide-acquire.ts";
import { destroyGeneration } from "./destroy-generation.ts";
import { register } from "./live-registry.ts";
import type { SandboxContext } from "./sandbox-context.ts";
import { type SandboxRow, sandboxLockWaitMs } from "./sandbox-store.ts";

export type AcquireRequest = {
  /** The logical uid (OIDC sub) of the run's owner. */
  uid: string;
  /** The root thread id of the execution tree (a uuid). */
  runtimeScopeId: string;
  /** The run's Workdir, relative to the UserWorkspace; it must already exist. */
  workdirPath: string;
  /** The execution tree's isolation tier (`agent.sandbox`); the node's default when absent. */
  tier?: SandboxTier;
  /** What the tree's sandbox may write (`agent.file_view`); `workspace` when absent. */
  fileView?: FileView;
  /** The run asking, for the lifecycle log lines only (a coalesced create names the first). */
  runId?: string;
  /** That run's submitting request (X-Request-Id), for the same lines (docs/decisions/0059). */
  requestId?: string;
};

export type AcquireRefusal =
  /** Another Workdir, node or state of the node (decideAcquire); nothing changed. */
  | DecidedRefusal
  /**
   * The sandbox lock stayed held past the wait (another acquirer is still creating or
   * deciding): nothing ran or changed here; retry.
   */
  | { ok: false; reason: "sandbox_busy" }
  /** The host directories refused the create (symlink, missing Workdir). */
  | { ok: false; reason: CreateRefusal; detail: string }
  /** The node's live sandboxes hold its whole tmpfs budget and none is warm (decision 0142). */
  | TmpfsBudgetRefusal;

export type AcquireResult = { ok: true; handle: SandboxHandle; created: boolean } | AcquireRefusal;

/** The refusal as the catalogue error a run fails with (shared/errors). */
export function acquireRefusalError(refusal: AcquireRefusal): WorkcellError {
  switch (refusal.reason) {
    case "sandbox_identity_mismatch":
      if (refusal.inUse !== undefined) {
        return domainError("sandbox_identity_mismatch", {
          message: `Another run of this conversation is still using its sandbox (${refusal.inUse.tier} tier, file view ${refusal.inUse.fileView}): wait for it to finish or cancel it, then ask for the other tier or view; files in the Workdir carry over, /tmp does not.`,
          details: {
            live_workdir_path: refusal.liveWorkdirPath,
            live_tier: refusal.inUse.tier,
            live_file_view: refusal.inUse.fileView,
          },
        });
      }
      return domainError("sandbox_identity_mismatch", {
        details: { live_workdir_path: refusal.liveWorkdirPath },
      });
    case "node_quiesced":
      return domainError("node_quiesced");
    case "sandbox_busy":
      return new WorkcellError(
        "unavailable",
        "Another agent-host is still creating or deciding this sandbox: nothing ran; retry shortly.",
        { details: { reason: "sandbox_busy" } },
      );
    case "sandbox_on_other_node":
      return new WorkcellError(
        "unavailable",
        "This execution tree's sandbox runs on another node: retry, the run must be picked up there.",
        { details: { reason: "sandbox_on_other_node", node_id: refusal.nodeId } },
      );
    case "symlink_refused":
    case "workdir_missing":
      return domainError(refusal.reason, { details: { detail: refusal.detail } });
    case "sandbox_memory_budget":
      return tmpfsBudgetError(refusal);
  }
}

/** How often one acquire re-decides after destroying a kept-warm generation it replaces. */
const MAX_DECISIONS = 3;

/**
 * The slow path of acquire: decide under the sandbox's advisory lock (decideAcquire)
 * whether to reuse the live generation or create a new one, and create it while still
 * holding the lock, so that every concurrent acquirer (any process) finds the result
 * instead of racing it. A destroy the decision calls for runs after the lock's
 * transaction has ended: it claims the row on another pooled connection, which a
 * transaction must never wait for (issue 32: with a single connection it waited for
 * ever). `workdirPath` is canonical.
 */
export async function acquireUnderLock(
  ctx: SandboxContext,
  sandboxId: string,
  request: AcquireRequest,
): Promise<AcquireResult> {
  // Not the caller's signal: followers share this work, and one caller giving up must
  // not fail the others. The create is bounded by its own timeout instead.
  const signal = AbortSignal.timeout(ctx.config.createTimeoutMs);
  for (let round = 1; ; round++) {
    const attempt = await decideAndCreate(ctx, sandboxId, request, signal);
    if (attempt.kind === "busy") return { ok: false, reason: "sandbox_busy" };
    if (attempt.kind === "done") {
      if (attempt.leftover) await removeQuietly(ctx, attempt.leftover);
      if ("error" in attempt.decided) throw attempt.decided.error;
      if (attempt.decided.result.ok) register(ctx, attempt.decided.result.handle);
      return attempt.decided.result;
    }
    // A kept-warm generation of another tier or file view: destroyed now, outside any
    // transaction, and only while still released (a run that took it meanwhile keeps
    // it, and the next round finds it in use).
    await destroyGeneration(ctx, sandboxId, attempt.generation, signal, { releasedOnly: true });
    if (round >= MAX_DECISIONS) return { ok: false, reason: "sandbox_busy" };
  }
}

type Attempt =
  /** Decided; `leftover` is the dead container of a replaced generation, removed after. */
  | { kind: "done"; decided: Decision; leftover?: InstanceRef | undefined }
  | { kind: "destroy_first"; generation: number }
  /** The lock wait ran out: another acquirer is still creating or deciding. */
  | { kind: "busy" };

/** One locked transaction: gather the facts, decide, and create if that is the decision. */
async function decideAndCreate(
  ctx: SandboxContext,
  sandboxId: string,
  request: AcquireRequest,
  signal: AbortSignal,
): Promise<Attempt> {
  const progress: CreateProgress = {};
  try {
    const lockWaitMs = sandboxLockWaitMs(ctx.config.createTimeoutMs);
    const locked = await ctx.store.withSandboxLock(sandboxId, lockWaitMs, async (tx) => {
      // Independent reads: sent together, so the transaction waits for one round trip
      // instead of two (postgres.js pipelines them on its connection; decision 0186).
      const [row, state] = await Promise.all([
        ctx.store.read(tx, sandboxId),
        ctx.store.nodeStateForCreate(tx, ctx.nodeId),
      ]);
      const node = await nodeView(ctx, tx, row, state, signal);
      const decision = decideAcquire(row, request, node);
      logDecision(ctx, sandboxId, request, decision, row);
      return apply(ctx, tx, { sandboxId, row, request, node, decision, signal, progress });
    });
    return locked.locked ? locked.value : { kind: "busy" };
  } catch (error) {
    // The transaction failed after the container started (lost connection, commit
    // error): its generation was rolled back, so the container must not outlive it.
    if (progress.started) await removeQuietly(ctx, progress.started);
    throw error;
  }
}

type Applying = {
  sandboxId: string;
  row: SandboxRow | undefined;
  request: AcquireRequest;
  node: LocalView;
  decision: AcquireDecision;
  signal: AbortSignal;
  progress: CreateProgress;
};

/** The decision's effects that belong in the locked transaction (no destroy among them). */
async function apply(ctx: SandboxContext, tx: DbTransaction, a: Applying): Promise<Attempt> {
  const { sandboxId, row, request, decision } = a;
  switch (decision.kind) {
    case "refuse":
      return done(decide(decision.refusal));
    case "reuse": {
      if (a.node.handle === undefined) throw new Error("reuse decided without a live handle");
      await ctx.store.takeForUse(tx, sandboxId, decision.generation);
      return done(decide({ ok: true, handle: a.node.handle, created: false }));
    }
    case "replace_kept_warm":
      return { kind: "destroy_first", generation: decision.generation };
    case "create":
      return done(await createGeneration(ctx, tx, sandboxId, row, request, a.signal, a.progress));
    case "replace_other_node":
    case "replace_dead": {
      await ctx.store.markFailed(tx, sandboxId, decision.generation, "running");
      const failed = row === undefined ? undefined : { ...row, state: "failed" as const };
      const created = await createGeneration(
        ctx,
        tx,
        sandboxId,
        failed,
        request,
        a.signal,
        a.progress,
      );
      // A stopped container of the dead generation is removed once the lock is released,
      // rather than left for the reconciler (the driver re-checks its labels first). Another
      // node's container is that node's reconciler's to remove.
      const dead = decision.kind === "replace_dead" ? instanceOfRow(decision) : undefined;
      const leftover =
        decision.kind === "replace_dead" && dead
          ? { ...dead, sandboxId, generation: decision.generation }
          : undefined;
      return done(created, leftover);
    }
  }
}

function logDecision(
  ctx: SandboxContext,
  sandboxId: string,
  request: AcquireRequest,
  decision: AcquireDecision,
  row: SandboxRow | undefined,
): void {
  const log = ctx.logger.child(lifecycleFields(sandboxId, request));
  if (decision.kind === "replace_kept_warm") {
    log.info(
      { generation: decision.generation, file_view: row?.fileView },
      "replacing a kept-warm sandbox made for another tier or file view",
    );
  } else if (decision.kind === "replace_other_node") {
    log.warn(
      {
        generation: decision.generation,
        other_node_id: decision.otherNodeId,
        node_lost: decision.nodeLost,
      },
      decision.nodeLost
        ? "sandbox row of a lost node; replacing it here"
        : "kept-warm sandbox of another node given up (its affinity wait passed); starting fresh here",
    );
  } else if (decision.kind === "replace_dead") {
    log.warn(
      { generation: decision.generation },
      "live row without a running container; replacing it",
    );
  }
}

const done = (decided: Decision, leftover?: InstanceRef): Attempt => ({
  kind: "done",
  decided,
  leftover,
});

/** The node's view plus the live handle when the row's generation runs here. */
type LocalView = NodeView & { handle?: SandboxHandle | undefined };

/**
 * The facts decideAcquire needs besides the row, each read only when it can matter: the
 * node's state (read FOR KEY SHARE by the caller, so that a quiesce waits for this create), whether another
 * node holding the row is lost, whether this node's generation still runs.
 */
async function nodeView(
  ctx: SandboxContext,
  tx: DbTransaction,
  row: SandboxRow | undefined,
  state: string | undefined,
  signal: AbortSignal,
): Promise<LocalView> {
  if (state === undefined) {
    throw new WorkcellError(
      "internal",
      `Node ${ctx.nodeId} has no row in 'nodes': register the node before starting its sandbox manager.`,
    );
  }
  const view = { id: ctx.nodeId, state, rowNodeLost: false, rowRunningHere: false };
  if (row?.state !== "running") return view;
  if (row.nodeId !== ctx.nodeId) {
    const lost = await ctx.store.isNodeLost(tx, row.nodeId, ctx.config.nodeTtlMs);
    return { ...view, rowNodeLost: lost };
  }
  const handle = await reusable(ctx, row, signal);
  return { ...view, rowRunningHere: handle !== undefined, handle };
}

/**
 * What the locked transaction decided. A create error is carried out as a value, not
 * thrown inside, so that the row's 'failed' state commits before the error surfaces.
 */
type Decision = { result: AcquireResult } | { error: unknown };

const decide = (result: AcquireResult): Decision => ({ result });

/** Set once the container runs, for cleanup if the transaction then fails. */
type CreateProgress = { started?: SandboxInstance };

async function createGeneration(
  ctx: SandboxContext,
  tx: DbTransaction,
  sandboxId: string,
  observed: SandboxRow | undefined,
  request: AcquireRequest,
  signal: AbortSignal,
  progress: CreateProgress,
): Promise<Decision> {
  // The run id is for log lines only: it is no part of the sandbox's identity or labels.
  const { runId: _logOnly, ...placement } = request;
  const identity = {
    sandboxId,
    ...placement,
    fileView: request.fileView ?? DEFAULT_FILE_VIEW,
    nodeId: ctx.nodeId,
  };
  const generation = await ctx.store.claimGeneration(tx, observed, identity);
  if (generation === undefined) {
    throw new Error(`sandbox ${sandboxId}: generation claim lost while holding its lock`);
  }
  const log = ctx.logger.child({ ...lifecycleFields(sandboxId, request), generation });
  let created: Awaited<ReturnType<typeof ctx.driver.create>>;
  try {
    created = await ctx.driver.create({ ...identity, generation }, signal);
  } catch (error) {
    // The driver left no container behind; the row records the failure.
    log.error({ err: error }, "sandbox create failed");
    await ctx.store.markFailed(tx, sandboxId, generation, "creating");
    return { error };
  }
  if (!created.ok) {
    log.warn({ reason: created.reason, detail: created.detail }, "sandbox create refused");
    await ctx.store.markFailed(tx, sandboxId, generation, "creating");
    return decide(created);
  }
  progress.started = created.instance;
  const { instanceId, tier } = created.instance;
  if (!(await ctx.store.markRunning(tx, sandboxId, generation, instanceId))) {
    throw new Error(
      `sandbox ${sandboxId}: generation ${generation} moved on while holding its lock`,
    );
  }
  ctx.metrics.sandboxCreates.inc({ tier });
  log.info({ container_id: instanceId }, "sandbox created");
  return decide({
    ok: true,
    created: true,
    handle: sandboxHandle({ ...identity, generation, instanceId, tier }),
  });
}

/**
 * The running row's sandbox, if its container is really there: known to this process,
 * or (created by another process of this node, or before a restart) found running with
 * the row's generation on its labels.
 */
async function reusable(
  ctx: SandboxContext,
  row: SandboxRow,
  signal: AbortSignal,
): Promise<SandboxHandle | undefined> {
  const entry = ctx.live.get(row.sandboxId);
  if (entry?.handle.generation === row.generation && !entry.pins.closed) return entry.handle;
  const at = instanceOfRow(row);
  if (!at) return undefined;
  const c = await ctx.driver.inspect(at, signal);
  if (!c?.running || c.sandboxId !== row.sandboxId || c.generation !== row.generation)
    return undefined;
  return handleFromRow(row);
}

async function removeQuietly(ctx: SandboxContext, c: InstanceRef): Promise<void> {
  try {
    await ctx.driver.destroy(c, AbortSignal.timeout(ctx.config.createTimeoutMs));
  } catch (error) {
    ctx.logger.error(
      { err: error, container_id: c.instanceId },
      "could not remove orphaned container",
    );
  }
}

/** What every lifecycle line of an acquire carries: whose sandbox, for which run. */
function lifecycleFields(sandboxId: string, request: AcquireRequest): Record<string, string> {
  return {
    uid: request.uid,
    ...(request.runId === undefined ? {} : { run_id: request.runId }),
    ...(request.requestId === undefined ? {} : { request_id: request.requestId }),
    sandbox_id: sandboxId,
  };
}
