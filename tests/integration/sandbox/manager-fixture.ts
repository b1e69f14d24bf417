import type Docker from "dockerode";
import { LABEL } from "../../../agent-host/sandbox/container-labels.ts";
import type { SandboxDriver } from "../../../agent-host/sandbox/driver.ts";
import type {
  SandboxConfig,
  SandboxConfigInput,
} from "../../../agent-host/sandbox/sandbox-config.ts";
import { SandboxManager } from "../../../agent-host/sandbox/sandbox-manager.ts";
import { createDb, type PostgresDb } from "../../../shared/db/client.ts";
import { nodes } from "../../../shared/db/schema/nodes.ts";
import { type DataRoot, freshDataRoot } from "../../support/data-root.ts";
import { removeContainersLabelled, requireDocker } from "../../support/docker.ts";
import { freshDatabase, type TestDatabase } from "../../support/postgres.ts";
import { silentLogger, testConfig, testDriver, uniqueNodeId } from "./sandbox-fixture.ts";

/** Real dockerd, a fresh database and data root, and a node of this test's own. */
export type ManagerWorld = {
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
  cleanup(): Promise<void>;
};

export async function managerWorld(
  overrides: Partial<SandboxConfigInput> = {},
): Promise<ManagerWorld> {
  const { docker, image } = requireDocker();
  const database = await freshDatabase({ max: 40 });
  const db = createDb(database.sql);
  const dataRoot = await freshDataRoot();
  const nodeId = uniqueNodeId();
  await registerNode(db, nodeId);
  const config = testConfig(image, { drainTimeoutMs: 1_000, killGraceMs: 1_000, ...overrides });
  const driver = testDriver(docker, dataRoot.path, config);
  const managers: SandboxManager[] = [];
  return {
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
    async cleanup() {
      await Promise.all(managers.map((m) => m.stop()));
      await removeContainersLabelled(docker, LABEL.nodeId, nodeId);
      await database.drop();
      await dataRoot.remove();
    },
  };
}

/** What agent-host's node registration does before the sandbox manager starts. */
export async function registerNode(db: PostgresDb, nodeId: string): Promise<void> {
  await db.insert(nodes).values({ nodeId, dataPlaneUrl: "http://127.0.0.1:1" });
}
