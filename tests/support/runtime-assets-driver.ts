import { readFile } from "node:fs/promises";
import { join } from "node:path";
import Docker from "dockerode";
import { DockerDriver } from "../../agent-host/sandbox/container/docker-driver.ts";
import type { SandboxDriver } from "../../agent-host/sandbox/driver.ts";
import type { SandboxConfigInput } from "../../agent-host/sandbox/sandbox-config.ts";
import { silentLogger, testConfig } from "../integration/sandbox/sandbox-fixture.ts";
import { type ProcessTierFixture, processTierFixture } from "./process-tier.ts";

export type Tier = "process" | "container";

/**
 * A driver of one tier over the Runtime Assets at `runtimeDir` (the tree the build made:
 * its manifest, one level up, names the container image): a process-tier fixture of its
 * own, or a Docker driver of that image. 512 MiB per sandbox unless `overrides` say.
 */
export async function runtimeAssetsDriver(
  tier: Tier,
  p: {
    dataRoot: string;
    runtimeDir: string;
    nodeId: string;
    egressRoot?: string;
    overrides?: Partial<SandboxConfigInput>;
  },
): Promise<{ driver: SandboxDriver; fixture: ProcessTierFixture | undefined }> {
  const manifest = JSON.parse(await readFile(join(p.runtimeDir, "../manifest.json"), "utf8")) as {
    key: string;
  };
  const config = testConfig(`workcell-sandbox:${manifest.key}`, {
    memoryBytes: 512 * 1024 * 1024,
    ...p.overrides,
  });
  if (tier === "process") {
    const fixture = await processTierFixture({
      dataRoot: p.dataRoot,
      config,
      logger: silentLogger,
      runtimeDir: p.runtimeDir,
    });
    return { driver: fixture.driver, fixture };
  }
  const driver = new DockerDriver({
    docker: new Docker(),
    logger: silentLogger,
    dataRoot: p.dataRoot,
    nodeId: p.nodeId,
    config,
    runtimeDir: p.runtimeDir,
    ...(p.egressRoot === undefined ? {} : { egressRoot: p.egressRoot }),
  });
  return { driver, fixture: undefined };
}
