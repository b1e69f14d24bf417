import type Docker from "dockerode";
import type { Logger } from "pino";
import { SANDBOX_RUNTIME_MOUNT } from "../../shared/paths/runtime-paths.ts";
import { KEEP_ALIVE_CMD, SANDBOX_USER } from "../sandbox/container/container-spec.ts";
import { boundedDockerCall } from "../sandbox/container/docker-call.ts";
import { isNotFoundError } from "../sandbox/container/docker-errors.ts";
import { runDockerExec } from "../sandbox/container/docker-exec.ts";
import { PROBE_TIMEOUT_MS, probeVerdict } from "./bwrap-asset-prober.ts";
import type { AssetProber } from "./runtime-assets.ts";

/** Marks a probe container (never `workcell.managed-by`: the reconciler leaves it alone). */
export const PROBE_LABEL = "workcell.asset-probe-of";
/** Enough for any probe's output (a version line); more is dropped. */
const PROBE_OUTPUT_BYTES = 64 * 1024;

export type ContainerAssetProberDeps = {
  docker: Docker;
  logger: Logger;
  /** The container tier's image (the Runtime Assets' own by default). */
  image: string;
  /** One probe container per node at a time, named after it. */
  nodeId: string;
  /** Bound on each Docker API call (sandboxConfig.dockerCallTimeoutMs). */
  dockerCallTimeoutMs: number;
};

/**
 * Probes the assets in one throw-away container of the container tier's image, with the
 * tree bound read-only at /runtime and each probe run as the bash tool's commands run
 * there (an exec as the sandbox user, through the image's /bin/sh). This is how a node
 * without bubblewrap (the agent-host in a container, docs/deploy/nodes.md) verifies the
 * assets it hands to its sandboxes. The container has no network, no capabilities and a
 * read-only root; it is removed after the probes, and a leftover of a crashed start is
 * removed by name before the next one.
 */
export function containerAssetProber(deps: ContainerAssetProberDeps): AssetProber {
  const name = `workcell-asset-probe-${deps.nodeId}`;
  const bound = (purpose: string) => ({ timeoutMs: deps.dockerCallTimeoutMs, purpose });
  const remove = (signal: AbortSignal) =>
    boundedDockerCall(bound("to remove the asset probe container"), signal, (bounded) =>
      deps.docker.getContainer(name).remove({ force: true, abortSignal: bounded }),
    ).catch((error: unknown) => {
      if (!isNotFoundError(error)) throw error;
    });

  return async (treeDir, assets, signal) => {
    try {
      await remove(signal);
      const container = await boundedDockerCall(
        bound("to create the asset probe container"),
        signal,
        (bounded) =>
          deps.docker.createContainer({
            name,
            Image: deps.image,
            Entrypoint: [KEEP_ALIVE_CMD[0] as string],
            Cmd: KEEP_ALIVE_CMD.slice(1),
            User: SANDBOX_USER,
            Env: [`PATH=${SANDBOX_RUNTIME_MOUNT}/usr/bin:/usr/bin:/bin`],
            Labels: { [PROBE_LABEL]: deps.nodeId },
            HostConfig: {
              Mounts: [
                { Type: "bind", Source: treeDir, Target: SANDBOX_RUNTIME_MOUNT, ReadOnly: true },
              ],
              Tmpfs: { "/tmp": "rw,nosuid,nodev,size=16m,mode=1777" },
              ReadonlyRootfs: true,
              CapDrop: ["ALL"],
              SecurityOpt: ["no-new-privileges:true"],
              NetworkMode: "none",
              Init: true,
              PidsLimit: 64,
              Memory: 512 * 1024 * 1024,
            },
            abortSignal: bounded,
          }),
      );
      await boundedDockerCall(bound("to start the asset probe container"), signal, (bounded) =>
        container.start({ abortSignal: bounded }),
      );
      const execDeps = {
        docker: deps.docker,
        logger: deps.logger,
        config: {
          execTimeoutMs: PROBE_TIMEOUT_MS,
          maxOutputBytesPerStream: PROBE_OUTPUT_BYTES,
          killGraceMs: 1_000,
          cancelWaitMs: 1_000,
          dockerCallTimeoutMs: deps.dockerCallTimeoutMs,
        },
      };
      const ref = { instanceId: container.id, sandboxId: name, generation: 0 };
      const verdicts: Array<string | undefined> = [];
      for (const asset of assets) {
        const outcome = await runDockerExec(
          execDeps,
          ref,
          { cmd: [...asset.probe], env: { HOME: "/tmp" }, cwd: "/tmp" },
          signal,
        );
        if (!outcome.ok) {
          verdicts.push("probe failed: the probe container went away");
          continue;
        }
        const { status, exitCode, stdout, stderr } = outcome.result;
        if (status !== "exited" || exitCode !== 0) {
          const why = status === "exited" ? `exit code ${exitCode}` : status;
          const err = stderr.bytes.toString("utf8").trim().slice(0, 200);
          verdicts.push(`probe failed (${why})${err === "" ? "" : `: ${err}`}`);
          continue;
        }
        verdicts.push(probeVerdict(asset, stdout.bytes.toString("utf8")));
      }
      return verdicts;
    } catch (error) {
      // The engine refused or did not answer: every asset is unverified, with the reason.
      if (signal.aborted) throw error;
      const reason = `probe failed in the container tier: ${(error as Error).message.slice(0, 200)}`;
      return assets.map(() => reason);
    } finally {
      await remove(AbortSignal.timeout(deps.dockerCallTimeoutMs)).catch((error: unknown) => {
        deps.logger.warn(
          { err: error, container: name },
          "could not remove the asset probe container",
        );
      });
    }
  };
}
