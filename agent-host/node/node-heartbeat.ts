import { and, eq, sql } from "drizzle-orm";
import type { Logger } from "pino";
import { abortable } from "../../shared/async/abortable.ts";
import type { Db } from "../../shared/db/client.ts";
import { type NodeState, nodes } from "../../shared/db/schema/nodes.ts";
import { agentRuns, sandboxes } from "../../shared/db/schema.ts";

export interface NodeHeartbeatDeps {
  readonly db: Db;
  readonly nodeId: string;
  readonly intervalMs: number;
  /** A beat that has not answered after this counts as failed (it is not waited for). */
  readonly beatTimeoutMs: number;
  /** The node TTL: without a good beat for this long, the sweeper may call the node lost. */
  readonly nodeTtlMs: number;
  /** Sandbox tiers ready now (`container`, `process`); bounded by the caller. */
  readonly tiers: (signal: AbortSignal) => Promise<string[]>;
  /** The row's state as the operator set it (admin quiesce / resume), seen by a beat. */
  readonly onState?: (state: NodeState) => Promise<void>;
  readonly logger: Logger;
}

/**
 * Keeps this agent-host's `nodes` row alive (docs/architecture.md §10): every `intervalMs`
 * one UPDATE writes heartbeat_at (database clock), the ready tiers and the node's live
 * sandboxes and running runs (counted in the same statement), and reads back the state
 * an operator may have changed. A beat is bounded by `beatTimeoutMs` and never awaited
 * past it: a hung connection makes the beat fail, not the loop stop. Whether the node is
 * fresh is a matter of time since the last good beat (`fresh`), not of catching errors.
 */
export class NodeHeartbeat {
  readonly #deps: NodeHeartbeatDeps;
  readonly #stop = new AbortController();
  #timer: NodeJS.Timeout | undefined;
  #lastOkAt = Number.NEGATIVE_INFINITY;
  #beating: Promise<void> = Promise.resolve();
  #lastState: NodeState | undefined;

  constructor(deps: NodeHeartbeatDeps) {
    this.#deps = deps;
  }

  /** One beat now (awaited, so the row is current when start() resolves), then the timer. */
  async start(): Promise<void> {
    await this.beat();
    this.#schedule();
  }

  /** True while the last good beat is younger than the node TTL. */
  get fresh(): boolean {
    return performance.now() - this.#lastOkAt < this.#deps.nodeTtlMs;
  }

  /** One bounded beat; failures are logged, never thrown. */
  beat(): Promise<void> {
    this.#beating = this.#beatOnce();
    return this.#beating;
  }

  async #beatOnce(): Promise<void> {
    const { db, nodeId, beatTimeoutMs, logger } = this.#deps;
    const signal = AbortSignal.any([this.#stop.signal, AbortSignal.timeout(beatTimeoutMs)]);
    try {
      const tiers = await abortable(this.#deps.tiers(signal), signal, "tier probe").catch(
        () => [] as string[],
      );
      const [row] = await abortable(
        db
          .update(nodes)
          .set({
            heartbeatAt: sql`now()`,
            stoppedAt: null,
            sandboxTiers: tiers,
            liveSandboxes: sql`(select count(*)::int from ${sandboxes} where ${and(eq(sandboxes.nodeId, nodeId), eq(sandboxes.state, "running"))})`,
            runningRuns: sql`(select count(*)::int from ${agentRuns} where ${and(eq(agentRuns.ownerNode, nodeId), eq(agentRuns.status, "running"))})`,
          })
          .where(eq(nodes.nodeId, nodeId))
          .returning({ state: nodes.state }),
        signal,
        "node heartbeat",
      );
      if (row === undefined) {
        logger.error({ node_id: nodeId }, "node heartbeat: this node has no row in 'nodes'");
        return;
      }
      this.#lastOkAt = performance.now();
      if (row.state !== this.#lastState) {
        this.#lastState = row.state;
        await this.#deps.onState?.(row.state);
      }
    } catch (error) {
      if (this.#stop.signal.aborted) return;
      const silentMs = performance.now() - this.#lastOkAt;
      logger.warn(
        { err: error, silent_ms: Number.isFinite(silentMs) ? Math.round(silentMs) : null },
        "node heartbeat failed",
      );
    }
  }

  #schedule(): void {
    if (this.#stop.signal.aborted) return;
    this.#timer = setTimeout(() => {
      void this.beat().finally(() => this.#schedule());
    }, this.#deps.intervalMs);
    this.#timer.unref();
  }

  /**
   * Stops beating. With `markStopped` (a clean stop), records `stopped_at` so the node is
   * lost at once instead of after the TTL; bounded like a beat.
   */
  async stop(options: { markStopped?: boolean } = {}): Promise<void> {
    this.#stop.abort();
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    await this.#beating;
    if (!options.markStopped) return;
    const signal = AbortSignal.timeout(this.#deps.beatTimeoutMs);
    await abortable(
      this.#deps.db
        .update(nodes)
        .set({ stoppedAt: sql`now()`, liveSandboxes: 0, runningRuns: 0, sandboxTiers: [] })
        .where(eq(nodes.nodeId, this.#deps.nodeId)),
      signal,
      "node stop record",
    ).catch((error: unknown) => {
      this.#deps.logger.warn({ err: error }, "could not record the node's stop; the TTL will");
    });
  }
}
