/**
 * Sandbox parts a driver makes ahead for new generations (the process tier's warm pool,
 * decision 0185). The sandbox manager owns the node's tmpfs budget (decision 0142), so it
 * decides how many may be held: it counts them as live sandboxes, has them given back
 * before it evicts anyone's warm sandbox, refills the pool off the run path and drains it
 * on stop.
 */
export interface SandboxPool {
  /** Blanks ready or being made: each counts in the tmpfs budget like a live sandbox. */
  held(): number;
  /** Makes blanks until the pool's size is held or `room` more are made. */
  fill(room: number): Promise<void>;
  /** Removes up to `count` ready blanks (room for a create); resolves to how many. */
  release(count: number): Promise<number>;
  /** Removes every blank, made or in the making, and any left by an earlier process. */
  drain(): Promise<void>;
  /** Resolves once no blank is being made (benches and tests wait for a refill with it). */
  settled(): Promise<void>;
}
