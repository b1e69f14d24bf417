import type { DbTransaction } from "../../shared/db/client.ts";
import { domainError } from "../../shared/errors/domain-errors.ts";
import { WorkcellError } from "../../shared/errors/workcell-error.ts";
import { DEFAULT_FILE_VIEW, type FileView } from "../../shared/paths/file-view.ts";
import { destroyGeneration } from "./destroy-generation.ts";
import type { CreateRefusal, SandboxContainer } from "./driver.ts";
import { register } from "./live-registry.ts";
import type { SandboxContext } from "./sandbox-context.ts";
import { handleFromRow, type SandboxHandle, sandboxHandle } from "./sandbox-handle.ts";
import type { SandboxRow } from "./sandbox-store.ts";
import { type SandboxTier, tierOfContainerId } from "./sandbox-tier.ts";

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
  /** The scope's live sandbox is bound to another Workdir (§4.2); nothing changed. */
  | {
      ok: false;
      reason: "sandbox_identity_mismatch";
      liveWorkdirPath: string;
      /**
       * What differs when the Workdir is the same: another run of the tree still uses
       * the live generation, made for another tier or file view (docs/decisions/0041).
       */
      inUse?: { tier: SandboxTier; fileView: FileView };
    }
  /** This node is quiesced (maintenance) and starts and hands out nothing. */
  | { ok: false; reason: "node_quiesced" }
  /** The scope's live sandbox runs on another node; the run belongs there. */
  | { ok: false; reason: "sandbox_on_other_node"; nodeId: string }
  /** The host directories refused the create (symlink, missing Workdir). */
  | { ok: false; reason: CreateRefusal; detail: string };

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
    case "sandbox_on_other_node":
      return new WorkcellError(
        "unavailable",
        "This execution tree's sandbox runs on another node: retry, the run must be picked up there.",
        { details: { reason: "sandbox_on_other_node", node_id: refusal.nodeId } },
      );
    case "symlink_refused":
    case "workdir_missing":
      return domainError(refusal.reason, { details: { detail: refusal.detail } });
  }
}

/**
 * The slow path of acquire: decide under the sandbox's advisory lock whether to reuse
 * the live generation or create a new one, and create it while still holding the lock,
 * so that every concurrent acquirer (any process) finds the result instead of racing
 * it. `workdirPath` is canonical.
 */
export async function acquireUnderLock(
  ctx: SandboxContext,
  sandboxId: string,
  request: AcquireRequest,
): Promise<AcquireResult> {
  // Not the caller's signal: followers share this work, and one caller giving up must
  // not fail the others. The create is bounded by its own timeout instead.
  const signal = AbortSignal.timeout(ctx.config.createTimeoutMs);
  const log = ctx.logger.child(lifecycleFields(sandboxId, request));
  const progress: CreateProgress = {};
  let decided: Decision;
  try {
    // A waiter may queue behind a full create and a few quick decisions.
    const lockWaitMs = 2 * ctx.config.createTimeoutMs;
    decided = await ctx.store.withSandboxLock(sandboxId, lockWaitMs, async (tx) => {
      const nodeState = await ctx.store.nodeStateForCreate(tx, ctx.nodeId);
      if (nodeState === undefined) {
        throw new WorkcellError(
          "internal",
          `Node ${ctx.nodeId} has no row in 'nodes': register the node before starting its sandbox manager.`,
        );
      }
      let row = await ctx.store.read(tx, sandboxId);
      if (row?.state === "running") {
        // Another tier or file view needs other mounts: a generation no run uses any more
        // (kept warm after its tree ended) is replaced; one still in use is a mismatch.
        const otherMounts = !sameTier(row.containerId, request) || !sameFileView(row, request);
        if (row.workdirPath !== request.workdirPath || (otherMounts && row.releasedAt === null)) {
          return decide({
            ok: false,
            reason: "sandbox_identity_mismatch",
            liveWorkdirPath: row.workdirPath,
            ...(row.workdirPath === request.workdirPath && row.containerId !== null
              ? { inUse: { tier: tierOfContainerId(row.containerId), fileView: row.fileView } }
              : {}),
          });
        }
        if (row.nodeId !== ctx.nodeId) {
          // A lost node serves nothing: its row no longer holds the scope (§10). Its
          // container goes when that node's reconciler sees the row is not live. Nor does
          // a live node's kept-warm generation no run uses: the claim left the run to that
          // node for the affinity wait (decision 0113), so a claim here means the wait
          // passed and the warm sandbox is given up rather than the run handed back.
          const lost = await ctx.store.isNodeLost(tx, row.nodeId, ctx.config.nodeTtlMs);
          if (!lost && row.releasedAt === null) {
            return decide({ ok: false, reason: "sandbox_on_other_node", nodeId: row.nodeId });
          }
          log.warn(
            { generation: row.generation, other_node_id: row.nodeId, node_lost: lost },
            lost
              ? "sandbox row of a lost node; replacing it here"
              : "kept-warm sandbox of another node given up (its affinity wait passed); starting fresh here",
          );
          await ctx.store.markFailed(tx, sandboxId, row.generation, "running");
          if (nodeState !== "active") return decide({ ok: false, reason: "node_quiesced" });
          return createGeneration(
            ctx,
            tx,
            sandboxId,
            { ...row, state: "failed" },
            request,
            signal,
            progress,
          );
        }
        if (nodeState !== "active") return decide({ ok: false, reason: "node_quiesced" });
        if (otherMounts) {
          log.info(
            { generation: row.generation, file_view: row.fileView },
            "replacing a kept-warm sandbox made for another tier or file view",
          );
          await destroyGeneration(ctx, sandboxId, row.generation, signal);
          row = await ctx.store.read(tx, sandboxId);
          return createGeneration(ctx, tx, sandboxId, row, request, signal, progress);
        }
        const handle = await reusable(ctx, row, signal);
        if (handle) {
          await ctx.store.takeForUse(tx, sandboxId, row.generation);
          return decide({ ok: true, handle, created: false });
        }
        log.warn(
          { generation: row.generation },
          "live row without a running container; replacing it",
        );
        if (row.containerId !== null) {
          // A stopped container of that generation is removed now rather than left
          // for the reconciler (the driver re-checks its labels first).
          const ref = { containerId: row.containerId, sandboxId, generation: row.generation };
          await ctx.driver.destroy(ref, signal);
        }
        await ctx.store.markFailed(tx, sandboxId, row.generation, "running");
      }
      if (nodeState !== "active") return decide({ ok: false, reason: "node_quiesced" });
      return createGeneration(ctx, tx, sandboxId, row, request, signal, progress);
    });
  } catch (error) {
    // The transaction failed after the container started (lost connection, commit
    // error): its generation was rolled back, so the container must not outlive it.
    if (progress.started) await removeQuietly(ctx, progress.started);
    throw error;
  }
  if ("error" in decided) throw decided.error;
  if (decided.result.ok) register(ctx, decided.result.handle);
  return decided.result;
}

/** A live sandbox serves only requests of its own tier (or naming none). */
export function sameTier(containerId: string | null, request: { tier?: SandboxTier }): boolean {
  return (
    request.tier === undefined ||
    containerId === null ||
    tierOfContainerId(containerId) === request.tier
  );
}

/** A live sandbox serves only requests of its own file view (absent = `workspace`). */
export function sameFileView(live: { fileView: FileView }, request: { fileView?: FileView }) {
  return live.fileView === (request.fileView ?? DEFAULT_FILE_VIEW);
}

/**
 * What the locked transaction decided. A create error is carried out as a value, not
 * thrown inside, so that the row's 'failed' state commits before the error surfaces.
 */
type Decision = { result: AcquireResult } | { error: unknown };

const decide = (result: AcquireResult): Decision => ({ result });

/** Set once the container runs, for cleanup if the transaction then fails. */
type CreateProgress = { started?: SandboxContainer };

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
  progress.started = created.container;
  const { containerId } = created.container;
  if (!(await ctx.store.markRunning(tx, sandboxId, generation, containerId))) {
    throw new Error(
      `sandbox ${sandboxId}: generation ${generation} moved on while holding its lock`,
    );
  }
  ctx.metrics.sandboxCreates.inc({ tier: tierOfContainerId(containerId) });
  log.info({ container_id: containerId }, "sandbox created");
  return decide({
    ok: true,
    created: true,
    handle: sandboxHandle({ ...identity, generation, containerId }),
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
  if (row.containerId === null) return undefined;
  const c = await ctx.driver.inspect(row.containerId, signal);
  if (!c?.running || c.sandboxId !== row.sandboxId || c.generation !== row.generation)
    return undefined;
  return handleFromRow(row);
}

async function removeQuietly(ctx: SandboxContext, c: SandboxContainer): Promise<void> {
  try {
    await ctx.driver.destroy(c, AbortSignal.timeout(ctx.config.createTimeoutMs));
  } catch (error) {
    ctx.logger.error(
      { err: error, container_id: c.containerId },
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
