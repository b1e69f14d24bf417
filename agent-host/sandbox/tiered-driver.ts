import { domainError } from "../../shared/errors/domain-errors.ts";
import type {
  CreateResult,
  DestroyOutcome,
  ExecFence,
  ExecOutcome,
  ExecRequest,
  InstanceRef,
  SandboxDriver,
  SandboxInstance,
  SandboxSpec,
} from "./driver.ts";
import {
  DEFAULT_TIER_ORDER,
  type SandboxTier,
  type SandboxTierStatus,
  tierOfInstanceId,
} from "./sandbox-tier.ts";

/**
 * The one driver the sandbox manager sees: it creates in the tier the spec names and
 * routes every other operation by the id's tier, so the manager, its fencing, the reaper
 * and the reconciler are the same code for both tiers. Only ready tiers have a driver;
 * an id of a tier that is not ready here is reported gone (its rows get marked, and no
 * command is ever run with less isolation).
 */
export class TieredDriver implements SandboxDriver {
  readonly #drivers: ReadonlyMap<SandboxTier, SandboxDriver>;
  readonly #statuses: readonly SandboxTierStatus[];

  constructor(
    drivers: ReadonlyMap<SandboxTier, SandboxDriver>,
    statuses: readonly SandboxTierStatus[],
  ) {
    this.#drivers = drivers;
    this.#statuses = statuses;
  }

  /** The tier a run gets when it names none: the process tier when ready, else the container tier. */
  defaultTier(): SandboxTier | undefined {
    return DEFAULT_TIER_ORDER.find((t) => this.#drivers.has(t));
  }

  isReady(tier: SandboxTier): boolean {
    return this.#drivers.has(tier);
  }

  status(tier: SandboxTier): SandboxTierStatus {
    return (
      this.#statuses.find((s) => s.tier === tier) ?? {
        tier,
        ready: false,
        detail: "not configured",
      }
    );
  }

  create(spec: SandboxSpec, signal: AbortSignal): Promise<CreateResult> {
    const tier = spec.tier ?? this.defaultTier();
    const driver = tier && this.#drivers.get(tier);
    if (!tier || !driver) {
      // Nothing is created and nothing runs: the run fails sandbox_tier_unavailable.
      const named = tier ?? "container";
      const { detail } = this.status(named);
      return Promise.reject(
        domainError("sandbox_tier_unavailable", {
          message: `The ${named} sandbox tier is not ready on this node (${detail}); runs never fall back to another tier or to the host.`,
          details: { tier: named, detail },
        }),
      );
    }
    return driver.create(spec, signal);
  }

  async inspect(instanceId: string, signal: AbortSignal): Promise<SandboxInstance | undefined> {
    return this.#driverOf(instanceId)?.inspect(instanceId, signal);
  }

  async exec(
    ref: InstanceRef,
    request: ExecRequest,
    signal: AbortSignal,
    fence?: ExecFence,
  ): Promise<ExecOutcome> {
    const driver = this.#driverOf(ref.instanceId);
    return driver
      ? driver.exec(ref, request, signal, fence)
      : { ok: false, reason: "sandbox_gone" };
  }

  async destroy(ref: InstanceRef, signal: AbortSignal): Promise<DestroyOutcome> {
    const driver = this.#driverOf(ref.instanceId);
    return driver ? driver.destroy(ref, signal) : { ok: true, existed: false };
  }

  async list(nodeId: string, signal: AbortSignal): Promise<SandboxInstance[]> {
    const lists = await Promise.all([...this.#drivers.values()].map((d) => d.list(nodeId, signal)));
    return lists.flat();
  }

  #driverOf(instanceId: string): SandboxDriver | undefined {
    return this.#drivers.get(tierOfInstanceId(instanceId));
  }
}
