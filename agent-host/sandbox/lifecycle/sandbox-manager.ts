import { Registry } from "prom-client";
import type { DbOrTransaction } from "../../../shared/db/client.ts";
import { WorkcellError } from "../../../shared/errors/workcell-error.ts";
import { sandboxId as sandboxIdOf } from "../../../shared/identity/sandbox-id.ts";
import { createWorkcellMetrics } from "../../../shared/metrics/workcell-metrics.ts";
import { isCanonicalUuid } from "../../../shared/paths/canonical-uuid.ts";
import { normalizeWorkdirPath } from "../../../shared/paths/normalize-workdir-path.ts";
import type { ExecRequest } from "../driver.ts";
import { type FencedOutcome, type SandboxHandle, STALE_GENERATION } from "../sandbox-handle.ts";
import { admitCreate, tmpfsCapacity, WARM_AT_ANY_AGE } from "../tmpfs-budget.ts";
import type { AcquireRequest, AcquireResult } from "./acquire-sandbox.ts";
import { BackgroundTasks } from "./background-tasks.ts";
import { acquireCoalesced } from "./coalesced-acquire.ts";
import { sameFileView, sameTier } from "./decide-acquire.ts";
import { destroyGeneration } from "./destroy-generation.ts";
import { execInGeneration, type ManagedExecOutcome } from "./exec-in-generation.ts";
import { forget } from "./live-registry.ts";
import { type ReconcileOptions, type ReconcileReport, reconcileNode } from "./reconcile-node.ts";
import type { SandboxContext, SandboxManagerDeps } from "./sandbox-context.ts";
import { type ReapWindow, SandboxStore } from "./sandbox-store.ts";

/**
 * Warm (kept after their tree ended) generations one uid may hold on a node: each pins up
 * to its /tmp and home tmpfs (512 MiB each by default) for the keep-warm window, so this
 * bounds one user's warm memory at 2 × 1 GiB where four finished runs held 1.6 GB and
 * nothing stopped more (issue 37 item 1). The newest stay (the conversations most likely
 * to continue); older ones are destroyed when another is kept.
 */
export const MAX_WARM_PER_UID = 2;

/** A sandbox generation the idle reaper may destroy, as observed when it looked. */
export type IdleCandidate = { sandboxId: string; generation: number };

/**
 * The lifecycle owner of this node's sandboxes (docs/architecture.md §4): one sandbox per
 * execution tree, generations allocated in Postgres, every operation fenced by the
 * generation it observed, pins and bounded drains, quiescence, the idle reaper and the
 * reconciler. Fencing failures are values; only broken infrastructure throws.
 */
export class SandboxManager {
  readonly #ctx: SandboxContext;
  #quiesced = false;
  #loops: AbortController | undefined;
  readonly #background: BackgroundTasks;
  readonly #trackFn = (work: Promise<unknown>): void => this.#background.track(work);
  /** Creates admitted within the tmpfs budget and not yet settled (tmpfs-budget.ts). */
  readonly #admitted = new Set<string>();
  /** Warm generations an admission of this process is evicting (tmpfs-budget.ts). */
  readonly #evicting = new Map<string, Promise<boolean>>();

  constructor(deps: SandboxManagerDeps) {
    this.#ctx = {
      ...deps,
      metrics: deps.metrics ?? createWorkcellMetrics(new Registry()),
      store: new SandboxStore(deps.db),
      live: new Map(),
      inflight: new Map(),
      destroying: new Set(),
    };
    this.#background = new BackgroundTasks(deps.logger);
  }

  /**
   * The execution tree's sandbox: the live generation if there is one (same Workdir,
   * this node), else a new generation created and started. Concurrent acquires of one
   * scope (in this process or any other sharing the database) create it once.
   */
  async acquire(request: AcquireRequest, signal: AbortSignal): Promise<AcquireResult> {
    signal.throwIfAborted();
    if (!isCanonicalUuid(request.runtimeScopeId)) {
      // The id is hashed as given: another spelling of the same uuid would be another sandbox.
      throw new WorkcellError(
        "invalid_request",
        "runtime_scope_id must be the root thread id as a lowercase hyphenated uuid.",
        { details: { field: "runtime_scope_id" } },
      );
    }
    const workdirPath = normalizeWorkdirPath(request.workdirPath);
    const id = sandboxIdOf(request.uid, request.runtimeScopeId);
    if (this.#quiesced) return { ok: false, reason: "node_quiesced" };
    const warm = await this.#acquireWarm(id, workdirPath, request);
    if (warm) return warm;
    // A new generation must fit the node's tmpfs budget (issue 37 item 1, decision 0142).
    const admitted = await admitCreate(this.#ctx, id, this.#admitted, signal, this.#evicting);
    if (!admitted.ok) return admitted;
    try {
      return await acquireCoalesced(
        this.#ctx,
        { quiesced: () => this.#quiesced, track: this.#trackFn },
        id,
        { ...request, workdirPath },
        signal,
      );
    } finally {
      admitted.settle();
    }
  }

  /** The fast path: a generation this process holds, confirmed live by one conditional touch. */
  async #acquireWarm(
    id: string,
    workdirPath: string,
    request: AcquireRequest,
  ): Promise<AcquireResult | undefined> {
    const entry = this.#ctx.live.get(id);
    // A different Workdir or tier is decided under the lock, against the row.
    if (!entry || entry.handle.workdirPath !== workdirPath) return undefined;
    if (!sameTier(entry.handle.instanceId, request)) return undefined;
    if (!sameFileView(entry.handle, request)) return undefined;
    if (await entry.pins.closeOutcome()) return undefined;
    if (!(await this.#ctx.store.takeForUse(this.#ctx.db, id, entry.handle.generation))) {
      forget(this.#ctx, id, entry.handle.generation);
      return undefined;
    }
    return { ok: true, handle: entry.handle, created: false };
  }

  /** Runs a command in the handle's generation; refused once that generation is over. */
  exec(
    handle: SandboxHandle,
    request: ExecRequest,
    signal: AbortSignal,
  ): Promise<ManagedExecOutcome> {
    return execInGeneration(this.#ctx, this.#trackFn, handle, request, signal);
  }

  /** Records a use of the handle's generation (keeps the idle reaper away). */
  async touch(handle: SandboxHandle, signal: AbortSignal): Promise<FencedOutcome> {
    signal.throwIfAborted();
    const ok = await this.#ctx.store.touch(this.#ctx.db, handle.sandboxId, handle.generation);
    return ok ? { ok: true } : STALE_GENERATION;
  }

  /**
   * Destroys the handle's generation: blocks new uses, waits for in-flight ones
   * (bounded, then cancels them), removes the container. A stale handle changes nothing.
   */
  async destroy(handle: SandboxHandle, signal: AbortSignal): Promise<FencedOutcome> {
    const out = await destroyGeneration(this.#ctx, handle.sandboxId, handle.generation, signal);
    return out.ok ? out : STALE_GENERATION;
  }

  /** Running generations of this node idle for longer than the configured time. */
  async findIdle(signal: AbortSignal): Promise<IdleCandidate[]> {
    signal.throwIfAborted();
    const rows = await this.#ctx.store.idleRows(this.#ctx.nodeId, this.#reapWindow());
    return rows.map(({ sandboxId, generation }) => ({ sandboxId, generation }));
  }

  /**
   * Destroys a candidate if, at this instant, it is still that generation, still idle
   * and not in use here. Anything that happened since findIdle (a touch, an exec, a
   * re-create) makes this a no-op.
   */
  async reapIfIdle(candidate: IdleCandidate, signal: AbortSignal): Promise<boolean> {
    const out = await destroyGeneration(
      this.#ctx,
      candidate.sandboxId,
      candidate.generation,
      signal,
      { idle: this.#reapWindow() },
    );
    return out.ok;
  }

  #reapWindow(): ReapWindow {
    return { idleMs: this.#ctx.config.idleTimeoutMs, keepWarmMs: this.#ctx.config.keepWarmMs };
  }

  /**
   * The handle's execution tree ended and nothing else uses the generation: keep it warm
   * for the conversation's next turn by marking it released, so the reaper destroys it
   * once the keep-warm window has passed and a run that takes it first clears the mark.
   * `db` is the tree cleanup's transaction: the release commits with the decision, under
   * the tree lock, so no run of the scope can take the sandbox between the two.
   * `disabled` (window 0) and `stale` (not the running generation) keep nothing.
   */
  async keepWarm(
    handle: SandboxHandle,
    db: DbOrTransaction,
  ): Promise<"kept" | "disabled" | "stale"> {
    if (this.#ctx.config.keepWarmMs === 0) return "disabled";
    const kept = await this.#ctx.store.release(db, handle.sandboxId, handle.generation);
    return kept ? "kept" : "stale";
  }

  /**
   * Keeps at most MAX_WARM_PER_UID of the uid's warm generations on this node, then at most
   * what the node's tmpfs budget leaves beside the generations in use (each counted at its
   * /tmp plus home tmpfs sizes) of anyone's, destroying the oldest others now (fenced like
   * a reap: only while still released and unused), so finished runs cannot pin a node's
   * memory for the keep-warm window (issue 37 item 1, decisions 0106, 0142). Returns the
   * sandbox ids destroyed.
   */
  async evictWarm(uid: string, signal: AbortSignal): Promise<string[]> {
    const { nodeId, store } = this.#ctx;
    const evicted: string[] = [];
    const nodeKeeps = async () => {
      const inUse = (await store.runningRows(nodeId)).filter((r) => r.releasedAt === null);
      return Math.max(0, tmpfsCapacity(this.#ctx) - inUse.length);
    };
    for (const rows of [
      () => store.warmBeyond(nodeId, uid, MAX_WARM_PER_UID),
      async () => store.warmBeyond(nodeId, undefined, await nodeKeeps()),
    ]) {
      for (const row of await rows()) {
        const out = await destroyGeneration(this.#ctx, row.sandboxId, row.generation, signal, {
          idle: WARM_AT_ANY_AGE,
        });
        if (out.ok) evicted.push(row.sandboxId);
      }
    }
    return evicted;
  }

  /** One pass of the idle reaper; returns the sandbox ids it destroyed. */
  async reapIdle(signal: AbortSignal): Promise<string[]> {
    const reaped: string[] = [];
    for (const candidate of await this.findIdle(signal)) {
      if (await this.reapIfIdle(candidate, signal)) reaped.push(candidate.sandboxId);
    }
    return reaped;
  }

  reconcile(signal: AbortSignal, options: ReconcileOptions = {}): Promise<ReconcileReport> {
    return reconcileNode(this.#ctx, signal, options);
  }

  /**
   * Maintenance: refuse new acquires (here and, through the node row, on every process
   * of this node), wait for creates in flight, then destroy every sandbox of this node
   * with its expected generation. Stays quiesced until resume().
   */
  async quiesce(signal: AbortSignal): Promise<{ destroyed: string[] }> {
    this.#quiesced = true;
    // Waits, through the node row lock, for every create in flight on this node.
    await this.#ctx.store.setNodeState(this.#ctx.nodeId, "quiesced");
    await Promise.allSettled([...this.#ctx.inflight.values()].map((p) => p.done));
    return this.#destroyAllAndSweep(signal);
  }

  /** True between quiesce() and resume() in this process. */
  get quiesced(): boolean {
    return this.#quiesced;
  }

  /** Generations this process holds live (the node heartbeat reports it). */
  get liveSandboxes(): number {
    return this.#ctx.live.size;
  }

  /**
   * A clean stop (SIGTERM): refuse new acquires here, wait for creates in flight, then
   * destroy every running sandbox of this node, so no live row points at a node that is
   * going away (docs/architecture.md §10) and the scopes' next runs start fresh on a live
   * node. The node row's state is left as the operator set it.
   */
  async releaseAll(signal: AbortSignal): Promise<{ destroyed: string[] }> {
    this.#quiesced = true;
    await Promise.allSettled([...this.#ctx.inflight.values()].map((p) => p.done));
    return this.#destroyAllAndSweep(signal);
  }

  /** Destroys every running sandbox of this node, then sweeps what no live row names. */
  async #destroyAllAndSweep(signal: AbortSignal): Promise<{ destroyed: string[] }> {
    const released = await this.#destroyAllRunning(signal);
    // A container whose row is no longer live (a create or destroy cut off by the stop)
    // would outlive the node: one reconcile pass removes it, so a clean stop leaves none.
    const leftovers = await this.reconcile(signal).catch((error: unknown) => {
      this.#ctx.logger.error({ err: error }, "final reconcile on stop failed");
      return undefined;
    });
    if (leftovers !== undefined && leftovers.destroyed.length > 0) {
      this.#ctx.logger.warn(
        { container_ids: leftovers.destroyed },
        "removed containers without a live sandbox row on stop",
      );
    }
    return released;
  }

  async #destroyAllRunning(signal: AbortSignal): Promise<{ destroyed: string[] }> {
    const rows = await this.#ctx.store.runningRows(this.#ctx.nodeId);
    const outcomes = await Promise.all(
      rows.map(async (row) => ({
        sandboxId: row.sandboxId,
        out: await destroyGeneration(this.#ctx, row.sandboxId, row.generation, signal).catch(
          (error: unknown) => {
            this.#ctx.logger.error({ err: error, sandbox_id: row.sandboxId }, "destroy failed");
            return { ok: false } as const;
          },
        ),
      })),
    );
    return { destroyed: outcomes.filter((o) => o.out.ok).map((o) => o.sandboxId) };
  }

  async resume(signal: AbortSignal): Promise<void> {
    signal.throwIfAborted();
    await this.#ctx.store.setNodeState(this.#ctx.nodeId, "active");
    this.#quiesced = false;
  }

  /**
   * Reconciles once (a restart adopts what survived and removes what leaked), then
   * runs the reconciler and the idle reaper periodically until stop().
   */
  async start(signal: AbortSignal): Promise<ReconcileReport> {
    const report = await this.reconcile(signal);
    this.#loops?.abort();
    const loops = new AbortController();
    this.#loops = loops;
    this.#background.every(this.#ctx.config.reaperIntervalMs, loops.signal, "idle reaper", (s) =>
      this.reapIdle(s),
    );
    this.#background.every(this.#ctx.config.reconcileIntervalMs, loops.signal, "reconciler", (s) =>
      this.reconcile(s),
    );
    return report;
  }

  /** Stops the periodic tasks and waits for a pass (or a touch) in progress to end. */
  async stop(): Promise<void> {
    this.#loops?.abort();
    this.#loops = undefined;
    await this.#background.settle();
  }
}
