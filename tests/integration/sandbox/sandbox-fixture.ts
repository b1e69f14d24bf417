import { randomBytes, randomUUID } from "node:crypto";
import { chown, mkdir } from "node:fs/promises";
import { join } from "node:path";
import Docker from "dockerode";
import { DockerDriver } from "../../../agent-host/sandbox/container/docker-driver.ts";
import type { SandboxDriver, SandboxInstance } from "../../../agent-host/sandbox/driver.ts";
import { LABEL } from "../../../agent-host/sandbox/instance/container-labels.ts";
import {
  type SandboxConfig,
  type SandboxConfigInput,
  sandboxConfigSchema,
} from "../../../agent-host/sandbox/sandbox-config.ts";
import { sandboxId } from "../../../shared/identity/sandbox-id.ts";
import type { FileView } from "../../../shared/paths/file-view.ts";
import { uidDirname } from "../../../shared/paths/uid-dirname.ts";
import { requireDocker } from "../../support/docker.ts";
import {
  type PausableProxy,
  type PausableProxyOptions,
  startPausableProxy,
} from "../../support/pausable-proxy.ts";
import { testLogger } from "../../support/test-logger.ts";

/** The sandbox user; host files it must write belong to it. */
export const GEM = 1000;

export const silentLogger = testLogger();

/** Every test labels its containers with its own node id and removes them by it. */
export function uniqueNodeId(): string {
  return `test-node-${randomBytes(6).toString("hex")}`;
}

export function testConfig(
  image: string,
  overrides: Partial<SandboxConfigInput> = {},
): SandboxConfig {
  return sandboxConfigSchema.parse({
    image,
    pidsLimit: 64,
    memoryBytes: 128 * 1024 * 1024,
    nanoCpus: 1_000_000_000,
    tmpSizeBytes: 16 * 1024 * 1024,
    homeSizeBytes: 16 * 1024 * 1024,
    execTimeoutMs: 20_000,
    killGraceMs: 2_000,
    // Destroy at once when an execution tree ends, as the lifecycle suites expect; the
    // keep-warm tests (tests/integration/runs/keep-warm.test.ts) open a window.
    keepWarmMs: 0,
    ...overrides,
  });
}

/** A container driver; `nodeId` only names the directory it stages its binds in. */
export function testDriver(
  docker: Docker,
  dataRoot: string,
  config: SandboxConfig,
  nodeId = "test-driver",
): DockerDriver {
  return new DockerDriver({ docker, logger: silentLogger, dataRoot, nodeId, config });
}

/** This machine's Docker engine, a fresh node id and a test driver over `dataRoot`. */
export function dockerForTest(
  dataRoot: string,
  overrides: Partial<SandboxConfigInput> = {},
): { docker: Docker; image: string; nodeId: string; driver: DockerDriver } {
  const { docker, image } = requireDocker();
  const driver = testDriver(docker, dataRoot, testConfig(image, overrides));
  return { docker, image, nodeId: uniqueNodeId(), driver };
}

/**
 * A driver whose Docker socket is a pausable proxy in front of this machine's engine (in
 * `dataRoot`), each Docker call bounded by `dockerCallTimeoutMs`: an engine that stops
 * answering, or answers late, when the test says.
 */
export async function proxiedDockerDriver(
  dataRoot: string,
  options: Omit<PausableProxyOptions, "listenPath">,
  dockerCallTimeoutMs: number,
): Promise<{ driver: DockerDriver; proxy: PausableProxy }> {
  const proxy = await startPausableProxy(
    { path: "/var/run/docker.sock" },
    { ...options, listenPath: join(dataRoot, `docker-${randomUUID()}.sock`) },
  );
  const driver = testDriver(
    new Docker({ socketPath: proxy.path as string }),
    dataRoot,
    testConfig(requireDocker().image, { dockerCallTimeoutMs }),
  );
  return { driver, proxy };
}

/**
 * A container for `uid`'s Workdir (materialized already) in a fresh runtime scope, as
 * the sandbox manager would ask for one; throws when the driver refuses.
 */
export async function createTestSandbox(
  driver: SandboxDriver,
  sandbox: {
    uid: string;
    workdirPath: string;
    nodeId: string;
    generation?: number;
    fileView?: FileView;
  },
  signal: AbortSignal,
): Promise<SandboxInstance> {
  const runtimeScopeId = randomUUID();
  const created = await driver.create(
    {
      sandboxId: sandboxId(sandbox.uid, runtimeScopeId),
      generation: sandbox.generation ?? 1,
      uid: sandbox.uid,
      runtimeScopeId,
      workdirPath: sandbox.workdirPath,
      nodeId: sandbox.nodeId,
      ...(sandbox.fileView === undefined ? {} : { fileView: sandbox.fileView }),
    },
    signal,
  );
  if (!created.ok) throw new Error(`create refused: ${created.reason} ${created.detail}`);
  return created.instance;
}

/**
 * What the run worker and the workspace layer would have done before a sandbox starts:
 * the uid's UserWorkspace with the Workdir in it, owned by the sandbox user.
 */
export async function materializeWorkdir(
  dataRoot: string,
  uid: string,
  workdirPath: string,
): Promise<string> {
  const workspace = join(dataRoot, "users", uidDirname(uid), "workspace");
  await mkdir(join(workspace, workdirPath), { recursive: true });
  let dir = workspace;
  await chown(dir, GEM, GEM);
  for (const part of workdirPath.split("/")) {
    dir = join(dir, part);
    await chown(dir, GEM, GEM);
  }
  return workspace;
}

/** Containers of one test node, running or not. */
export async function containersOfNode(docker: Docker, nodeId: string) {
  return docker.listContainers({ all: true, filters: { label: [`${LABEL.nodeId}=${nodeId}`] } });
}

/**
 * A hook for "the command is running": pass `mark` as an exec's onStdout and have the
 * command print first; `seen` settles when its first output arrives, so a test acts
 * while the exec is in flight instead of guessing with a sleep.
 */
export function startedSignal(): { mark: () => void; seen: Promise<void> } {
  let mark: () => void = () => {};
  const seen = new Promise<void>((resolve) => {
    mark = resolve;
  });
  return { mark: () => mark(), seen };
}
