import { stat } from "node:fs/promises";
import type Docker from "dockerode";
import type { Logger } from "pino";
import { abortable } from "../../shared/async/abortable.ts";
import { bwrapAssetProber } from "../runtime/bwrap-asset-prober.ts";
import { containerAssetProber } from "../runtime/container-asset-prober.ts";
import type { AssetProber } from "../runtime/runtime-assets.ts";
import { RUNTIME_ASSETS_IMAGE_REPOSITORY } from "../runtime/sandbox-image.ts";
import { DockerDriver } from "./container/docker-driver.ts";
import { nodeBindStagingDir } from "./container/staged-binds.ts";
import type { SandboxDriver } from "./driver.ts";
import { processDriverFrom } from "./process/process-driver.ts";
import { processPreflight } from "./process/process-preflight.ts";
import type { SandboxConfig } from "./sandbox-config.ts";
import {
  CONTAINER_SHARED_BUDGET,
  type SandboxTier,
  type SandboxTierStatus,
} from "./sandbox-tier.ts";
import { TieredDriver } from "./tiered-driver.ts";

/** How long start-up waits for the Docker engine before reporting the container tier unavailable. */
export const DOCKER_PING_TIMEOUT_MS = 3_000;
/** How long start-up waits for the engine to say whether the sandbox image is there. */
export const DOCKER_IMAGE_CHECK_TIMEOUT_MS = 10_000;

export type SandboxTierInputs = {
  logger: Logger;
  /** users/<uid dirname>/workspace and skills/ live below it. */
  dataRoot: string;
  /**
   * This node's id: the container tier stages its binds in a directory of this node's own,
   * and it names the node's asset probe container.
   */
  nodeId: string;
  config: SandboxConfig;
  /** The Runtime Assets tree mounted at /runtime in both tiers. */
  runtimeDir: string;
  /** The container tier's engine; absent = the tier is not offered. */
  docker?: Docker;
  /** Node-local root of the containers' egress directories (DockerDriverDeps.egressRoot). */
  containerEgressRoot?: string;
  /** The process tier's node-local settings; absent = the tier is not offered. */
  process?: {
    stateDir: string;
    cgroupParent: string;
    /** PATH searched for bwrap/setpriv/sh (default: agent-host's). */
    path?: string;
  };
};

/** The ready drivers of this node, as one value the composition root receives. */
export type SandboxTierSet = {
  driver: TieredDriver;
  statuses: SandboxTierStatus[];
  /** The Runtime Assets tree both tiers mount at /runtime. */
  runtimeDir: string;
  /**
   * Where this node's container creates stage their host binds (staged-binds.ts), whether
   * or not the container tier is ready now: agent-host sweeps it at start.
   */
  bindStagingDir: string;
  /**
   * Where the Runtime Assets' probes run: bubblewrap when the process tier is ready (or
   * neither tier is: the probes then fail with bubblewrap's reason), else a container of
   * the container tier's image. A node without bubblewrap (the agent-host in a
   * container) thus verifies its assets in the tier it runs them in.
   */
  assetProber: AssetProber;
  /**
   * The tiers usable right now, as the node heartbeat and `/readyz` report them (docs/api.md
   * "Nodes and runtimes"): a ready tier stays reported while its engine answers within
   * the signal's bound (the container tier pings Docker; the process tier has no daemon).
   * A tier not ready at start is never reported: no driver was made for it.
   */
  probe(signal: AbortSignal): Promise<SandboxTier[]>;
};

/**
 * Preflight of both tiers (docs/architecture.md §3): each is `ready` with what it found, or
 * `unavailable` with the part that is missing. Only ready tiers get a driver; a tier
 * that is not ready never runs anything.
 */
export async function detectSandboxTiers(inputs: SandboxTierInputs): Promise<SandboxTierSet> {
  const drivers = new Map<SandboxTier, SandboxDriver>();
  const statuses: SandboxTierStatus[] = [];
  const runtimeMissing = await runtimeDirProblem(inputs.runtimeDir);
  const bindStagingDir = nodeBindStagingDir(inputs.dataRoot, inputs.nodeId);

  if (inputs.docker) {
    const detail = await dockerProblem(inputs.docker, inputs.config.image);
    if (detail.ok) {
      drivers.set(
        "container",
        new DockerDriver({
          docker: inputs.docker,
          logger: inputs.logger,
          dataRoot: inputs.dataRoot,
          config: inputs.config,
          runtimeDir: runtimeMissing ? undefined : inputs.runtimeDir,
          nodeId: inputs.nodeId,
          egressRoot: inputs.containerEgressRoot,
        }),
      );
    }
    statuses.push({ tier: "container", ready: detail.ok, detail: detail.detail });
  } else {
    statuses.push({ tier: "container", ready: false, detail: "not configured on this node" });
  }

  if (inputs.process) {
    const found = runtimeMissing
      ? ({ ready: false, missing: runtimeMissing } as const)
      : await processPreflight({
          stateDir: inputs.process.stateDir,
          cgroupParent: inputs.process.cgroupParent,
          ...(inputs.process.path === undefined ? {} : { path: inputs.process.path }),
        });
    if (found.ready) {
      const { config } = inputs;
      drivers.set(
        "process",
        processDriverFrom(found.parts, {
          logger: inputs.logger,
          dataRoot: inputs.dataRoot,
          runtimeDir: inputs.runtimeDir,
          config,
          poolSize: config.processPoolSize,
        }),
      );
      statuses.push({ tier: "process", ready: true, detail: found.detail });
    } else {
      statuses.push({ tier: "process", ready: false, detail: found.missing });
    }
  } else {
    statuses.push({ tier: "process", ready: false, detail: "not configured on this node" });
  }
  for (const s of statuses) {
    inputs.logger[s.ready ? "info" : "warn"](
      { tier: s.tier, ready: s.ready, detail: s.detail },
      "sandbox tier preflight",
    );
  }
  const { docker } = inputs;
  const assetProber =
    !drivers.has("process") && drivers.has("container") && docker
      ? containerAssetProber({
          docker,
          logger: inputs.logger,
          image: inputs.config.image,
          nodeId: inputs.nodeId,
          dockerCallTimeoutMs: inputs.config.dockerCallTimeoutMs,
        })
      : bwrapAssetProber("bwrap");
  return {
    driver: new TieredDriver(drivers, statuses),
    statuses,
    runtimeDir: inputs.runtimeDir,
    bindStagingDir,
    assetProber,
    async probe(signal) {
      const usable: SandboxTier[] = [];
      if (drivers.has("container") && docker) {
        // dockerode's typings omit ping's options; the wait is bounded instead.
        const answered = await abortable(docker.ping(), signal).then(
          () => true,
          () => false,
        );
        if (answered) usable.push("container");
      }
      if (drivers.has("process")) usable.push("process");
      return usable;
    },
  };
}

async function runtimeDirProblem(dir: string): Promise<string | undefined> {
  const found = await stat(dir).catch(() => undefined);
  if (found?.isDirectory()) return undefined;
  return `the Runtime Assets are missing at ${dir}: build them with scripts/ensure-system.sh (infra/runtime-assets/build-runtime-assets.sh)`;
}

async function dockerProblem(
  docker: Docker,
  image: string,
): Promise<{ ok: boolean; detail: string }> {
  let version: string;
  try {
    version = (
      await Promise.race([
        docker.ping().then(() => docker.version()),
        new Promise<never>((_, reject) =>
          setTimeout(() => reject(new Error("no answer")), DOCKER_PING_TIMEOUT_MS).unref(),
        ),
      ])
    ).Version;
  } catch (error) {
    return {
      ok: false,
      detail: `the Docker engine does not answer (${(error as Error).message}); scripts/ensure-system.sh starts it`,
    };
  }
  // Without its image every create would fail: the tier is not ready, and says why.
  const present = await Promise.race([
    docker
      .getImage(image)
      .inspect()
      .then(
        () => true,
        () => false,
      ),
    new Promise<boolean>((resolve) =>
      setTimeout(() => resolve(false), DOCKER_IMAGE_CHECK_TIMEOUT_MS).unref(),
    ),
  ]);
  if (!present) {
    return {
      ok: false,
      detail: image.startsWith(`${RUNTIME_ASSETS_IMAGE_REPOSITORY}:`)
        ? `the sandbox image ${image} is not in the Docker engine: build the Runtime Assets with Docker running (scripts/ensure-system.sh, infra/runtime-assets/build-runtime-assets.sh)`
        : `the sandbox image ${image} (SANDBOX_IMAGE) is not in the Docker engine: load it, or unset SANDBOX_IMAGE for the Runtime Assets' image`,
    };
  }
  return { ok: true, detail: `engine ${version}, image ${image}; ${CONTAINER_SHARED_BUDGET}` };
}
