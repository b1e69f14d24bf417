import { randomUUID } from "node:crypto";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import Docker from "dockerode";
import {
  CONTAINER_EGRESS_MOUNT,
  containerEgressDir,
} from "../../../../agent-host/egress/container-egress-dir.ts";
import type { EgressProxy } from "../../../../agent-host/egress/egress-proxy.ts";
import { EGRESS_PRELUDE, egressEnv } from "../../../../agent-host/egress/sandbox-egress-env.ts";
import { DockerDriver } from "../../../../agent-host/sandbox/container/docker-driver.ts";
import type { CreateResult, SandboxDriver } from "../../../../agent-host/sandbox/driver.ts";
import { containerName, LABEL } from "../../../../agent-host/sandbox/instance/container-labels.ts";
import { DEFAULT_RUNTIME_ASSETS_DIR } from "../../../../shared/env/agent-host-env.ts";
import { removeContainersLabelled } from "../../../support/docker.ts";
import { type ProcessTierFixture, processTierFixture } from "../../../support/process-tier.ts";
import { silentLogger, testConfig, uniqueNodeId } from "../../sandbox/sandbox-fixture.ts";

// One sandbox per user in one tier (real bubblewrap, or a real Docker container of the
// Runtime Assets' image), reaching a test's egress proxy as a run's would (decision 0117):
// the socket where the tier sees it, the relay prelude, the proxy variables.

export const RUNTIME_TREE = process.env.RUNTIME_ASSETS_DIR ?? DEFAULT_RUNTIME_ASSETS_DIR;
export type Tier = "process" | "container";
export type ShResult = { code: number | null; out: string; err: string };

export type TierSandboxes = {
  /** Runs bash in `uid`'s sandbox; with `env` (a run's egress env) the relay starts first. */
  sh(uid: string, script: string, env?: Record<string, string>): Promise<ShResult>;
  /** Opens a listener of the proxy for `uid`'s sandbox for the duration of `use`. */
  withEgress<T>(
    uid: string,
    use: (env: Record<string, string>) => Promise<T>,
    runId?: string,
  ): Promise<T>;
  /** Where the tier's sandbox sees the socket's directory, on the host and inside. */
  place(uid: string): { hostDir: string; sandboxDir: string };
  close(): Promise<void>;
};

const signal = () => AbortSignal.timeout(180_000);

async function driverFor(tier: Tier, dataRoot: string, egressRoot: string, nodeId: string) {
  const manifest = JSON.parse(await readFile(join(RUNTIME_TREE, "../manifest.json"), "utf8")) as {
    key: string;
  };
  // Room for a venv and a pip install on a loaded machine.
  const config = testConfig(`workcell-sandbox:${manifest.key}`, {
    memoryBytes: 512 * 1024 * 1024,
    execTimeoutMs: 150_000,
  });
  if (tier === "process") {
    const fixture = await processTierFixture({
      dataRoot,
      config,
      logger: silentLogger,
      runtimeDir: RUNTIME_TREE,
    });
    return { driver: fixture.driver as SandboxDriver, fixture };
  }
  const driver = new DockerDriver({
    docker: new Docker(),
    logger: silentLogger,
    dataRoot,
    nodeId,
    config,
    runtimeDir: RUNTIME_TREE,
    egressRoot,
  });
  return { driver: driver as SandboxDriver, fixture: undefined };
}

/** Creates the sandboxes (each user's workdir `work` must exist below `dataRoot`). */
export async function tierSandboxes(p: {
  tier: Tier;
  dataRoot: string;
  proxy: EgressProxy;
  uids: readonly string[];
}): Promise<TierSandboxes> {
  const nodeId = uniqueNodeId();
  const egressRoot = join(p.dataRoot, `egress-${p.tier}-${nodeId}`);
  const { driver, fixture }: { driver: SandboxDriver; fixture?: ProcessTierFixture } =
    await driverFor(p.tier, p.dataRoot, egressRoot, nodeId);
  const refs: Record<string, CreateResult> = {};
  for (const uid of p.uids) {
    refs[uid] = await driver.create(
      {
        sandboxId: `egress${p.tier.slice(0, 4)}${uid}${nodeId.slice(-6)}`,
        generation: 1,
        uid,
        runtimeScopeId: randomUUID(),
        workdirPath: "work",
        nodeId,
      },
      signal(),
    );
  }
  const container = (uid: string) => {
    const ref = refs[uid];
    if (ref === undefined || !ref.ok)
      throw new Error(`no sandbox for ${uid}: ${JSON.stringify(ref)}`);
    return ref.instance;
  };
  const place = (uid: string) => {
    const c = container(uid);
    return p.tier === "process"
      ? { hostDir: join(fixture?.stateDir ?? "", c.instanceId, "tmp"), sandboxDir: "/tmp" }
      : {
          hostDir: containerEgressDir(egressRoot, containerName(c.sandboxId, c.generation)),
          sandboxDir: CONTAINER_EGRESS_MOUNT,
        };
  };
  return {
    place,
    async sh(uid, script, env) {
      const out = await driver.exec(
        container(uid),
        {
          cmd: [
            "/runtime/usr/bin/bash",
            "-c",
            env === undefined ? script : EGRESS_PRELUDE + script,
          ],
          ...(env === undefined ? {} : { env }),
        },
        signal(),
      );
      if (!out.ok) throw new Error("sandbox gone");
      return {
        code: out.result.exitCode,
        out: out.result.stdout.bytes.toString(),
        err: out.result.stderr.bytes.toString(),
      };
    },
    async withEgress(uid, use, runId = randomUUID()) {
      const where = place(uid);
      const egress = await p.proxy.open(
        { uid, runId, sandboxId: container(uid).sandboxId, generation: 1 },
        50_000_000,
        where.hostDir,
      );
      try {
        return await use(egressEnv(`${where.sandboxDir}/${egress.relativePath}`));
      } finally {
        await egress.close();
      }
    },
    async close() {
      await fixture?.cleanup();
      if (p.tier === "container")
        await removeContainersLabelled(new Docker(), LABEL.nodeId, nodeId);
    },
  };
}
