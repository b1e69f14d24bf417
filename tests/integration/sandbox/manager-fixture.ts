import { randomUUID } from "node:crypto";
import type Docker from "dockerode";
import type { SandboxDriver, SandboxInstance } from "../../../agent-host/sandbox/driver.ts";
import { LABEL } from "../../../agent-host/sandbox/instance/container-labels.ts";
import { SandboxManager } from "../../../agent-host/sandbox/lifecycle/sandbox-manager.ts";
import type {
  SandboxConfig,
  SandboxConfigInput,
} from "../../../agent-host/sandbox/sandbox-config.ts";
import { type SandboxTier, tierOfInstanceId } from "../../../agent-host/sandbox/sandbox-tier.ts";
import { TieredDriver } from "../../../agent-host/sandbox/tiered-driver.ts";
import { createDb, type PostgresDb } from "../../../shared/db/client.ts";
import { nodes } from "../../../shared/db/schema/nodes.ts";
import { type DataRoot, freshDataRoot } from "../../support/data-root.ts";
import { removeContainersLabelled, requireDocker } from "../../support/docker.ts";
import { freshDatabase, type TestDatabase } from "../../support/postgres.ts";
import { processTierFixture } from "../../support/process-tier.ts";
import type { ChildTierArgs } from "./manager-child.ts";
import {
  materializeWorkdir,
  silentLogger,
  testConfig,
  testDriver,
  uniqueNodeId,
} from "./sandbox-fixture.ts";

/** Both tiers run the same lifecycle suites (docs/architecture.md §3 "one contract"). */
export const TIERS = ["container", "process"] as const satisfies readonly SandboxTier[];

/** Real dockerd or bubblewrap, a fresh database and data root, and a node of this test's own. */
export type ManagerWorld = {
  tier: SandboxTier;
  docker: Docker;
  image: string;
  database: TestDatabase;
  db: PostgresDb;
  dataRoot: DataRoot;
  nodeId: string;
  config: SandboxConfig;
  driver: SandboxDriver;
  /** A manager of this node; several may coexist, like agent-host processes or restarts. */
  manager(driver?: SandboxDriver): SandboxManager;
  /** This node's sandboxes as the tier's driver lists them, running or not. */
  sandboxes(): Promise<SandboxInstance[]>;
  /** How a child process (manager-child.ts) builds the same tier's driver. */
  childTier: ChildTierArgs;
  /** Ends a sandbox's life behind the manager's back (its keep-alive / cgroup killed). */
  kill(instanceId: string): Promise<void>;
  /** Removes a sandbox behind the manager's back (as if it vanished). */
  remove(instanceId: string): Promise<void>;
  cleanup(): Promise<void>;
};

export type WorldOptions = {
  /** The manager's database pool size (1: no path may wait for a second connection). */
  poolMax?: number;
  /** Both tiers ready (the tier argument is then only the world's label). */
  bothTiers?: boolean;
  /** The process tier's /runtime (default: the busybox tree; the real Runtime Assets' tree). */
  runtimeDir?: string;
  /** Makes the data root (default: freshDataRoot; a btrfs loop one for subvolume Workdirs). */
  dataRoot?: () => Promise<DataRoot>;
};

export async function managerWorld(
  overrides: Partial<SandboxConfigInput> = {},
  tier: SandboxTier = "container",
  options: WorldOptions = {},
): Promise<ManagerWorld> {
  const { docker, image } = requireDocker();
  const database = await freshDatabase({ max: options.poolMax ?? 40 });
  const db = createDb(database.sql);
  const dataRoot = await (options.dataRoot ?? freshDataRoot)();
  const nodeId = uniqueNodeId();
  await registerNode(db, nodeId);
  const config = testConfig(image, { drainTimeoutMs: 1_000, killGraceMs: 1_000, ...overrides });
  const process =
    tier === "process" || options.bothTiers
      ? await processTierFixture({
          dataRoot: dataRoot.path,
          config,
          logger: silentLogger,
          ...(options.runtimeDir === undefined ? {} : { runtimeDir: options.runtimeDir }),
        })
      : undefined;
  const containers = tier === "container" || options.bothTiers;
  const drivers = new Map<SandboxTier, SandboxDriver>();
  if (containers) drivers.set("container", testDriver(docker, dataRoot.path, config));
  if (process) drivers.set("process", process.driver);
  // The manager sees what agent-host wires: the tiered driver with its tiers ready.
  const driver = new TieredDriver(
    drivers,
    [...drivers.keys()].map((t) => ({ tier: t, ready: true, detail: "test" })),
  );
  const managers: SandboxManager[] = [];
  const sig = () => AbortSignal.timeout(30_000);
  return {
    tier,
    docker,
    image,
    database,
    db,
    dataRoot,
    nodeId,
    config,
    driver,
    manager(d = driver) {
      const m = new SandboxManager({ db, driver: d, logger: silentLogger, nodeId, config });
      managers.push(m);
      return m;
    },
    sandboxes: () => driver.list(nodeId, sig()),
    childTier: process
      ? {
          process: {
            stateDir: process.stateDir,
            cgroupParent: process.cgroupParent,
            runtimeDir: process.runtimeDir,
          },
        }
      : {},
    async kill(instanceId) {
      if (process && tierOfInstanceId(instanceId) === "process") {
        // A new generation starts its standby at create (decisions 0084, 0088): wait until
        // it is built, or the kill could run between the group's mkdir and the join and
        // leave the standby alive in a group it can no longer remove.
        await process.driver.standbyReady(instanceId);
        await process.parts.cgroups.kill(instanceId);
      } else await docker.getContainer(instanceId).kill();
    },
    async remove(instanceId) {
      if (process && tierOfInstanceId(instanceId) === "process") {
        const c = await process.driver.inspect({ instanceId, tier: "process" }, sig());
        if (c) await process.driver.destroy(c, sig());
      } else {
        await docker.getContainer(instanceId).remove({ force: true });
      }
    },
    async cleanup() {
      await Promise.all(managers.map((m) => m.stop()));
      await removeContainersLabelled(docker, LABEL.nodeId, nodeId);
      await process?.cleanup();
      await database.drop();
      await dataRoot.remove();
    },
  };
}

/** What agent-host's node registration does before the sandbox manager starts. */
export async function registerNode(db: PostgresDb, nodeId: string): Promise<void> {
  await db.insert(nodes).values({ nodeId, dataPlaneUrl: "http://127.0.0.1:1" });
}

/** A fresh runtime scope of `uid` over a new managed Workdir, materialized as the run worker would. */
export async function freshScope(
  world: Pick<ManagerWorld, "dataRoot">,
  uid: string,
): Promise<{ uid: string; runtimeScopeId: string; workdirPath: string }> {
  const workdirPath = `projects/${randomUUID()}`;
  await materializeWorkdir(world.dataRoot.path, uid, workdirPath);
  return { uid, runtimeScopeId: randomUUID(), workdirPath };
}
