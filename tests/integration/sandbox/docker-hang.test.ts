import { access } from "node:fs/promises";
import { join } from "node:path";
import type Docker from "dockerode";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { DockerDriver } from "../../../agent-host/sandbox/container/docker-driver.ts";
import type { SandboxInstance } from "../../../agent-host/sandbox/driver.ts";
import { LABEL } from "../../../agent-host/sandbox/instance/container-labels.ts";
import { domainReasonOf, isWorkcellError } from "../../../shared/errors/index.ts";
import { type DataRoot, freshDataRoot } from "../../support/data-root.ts";
import { removeContainersLabelled } from "../../support/docker.ts";
import type { PausableProxy } from "../../support/pausable-proxy.ts";
import {
  createTestSandbox,
  dockerForTest,
  materializeWorkdir,
  proxiedDockerDriver,
} from "./sandbox-fixture.ts";

// Issue 14 (3): a Docker engine that stops answering (here: a proxy in front of its
// socket that holds every byte) ends each call with an error that says what is known
// about the command, within the per-call bound, instead of hanging the run for ever.

/** Short, so each hung call costs the suite about this long. */
const CALL_TIMEOUT_MS = 1_500;
const signal = () => AbortSignal.timeout(60_000);
const EXEC_START = /^POST [^ ]*\/exec\/[0-9a-f]+\/start /;

describe("Docker calls against an engine that stops answering", () => {
  let docker: Docker;
  let dataRoot: DataRoot;
  let workspace: string;
  let nodeId: string;
  let healthy: DockerDriver;
  let sandbox: SandboxInstance;
  let proxy: PausableProxy | undefined;

  beforeAll(async () => {
    dataRoot = await freshDataRoot();
    ({ docker, nodeId, driver: healthy } = dockerForTest(dataRoot.path));
    const uid = "hang-user";
    workspace = await materializeWorkdir(dataRoot.path, uid, "work");
    sandbox = await createTestSandbox(healthy, { uid, workdirPath: "work", nodeId }, signal());
  });

  afterEach(async () => {
    await proxy?.close();
    proxy = undefined;
  });

  afterAll(async () => {
    await removeContainersLabelled(docker, LABEL.nodeId, nodeId);
    await dataRoot.remove();
  });

  /** A driver whose Docker socket is the test's proxy. */
  async function proxied(pauseBefore?: (chunk: Buffer) => boolean): Promise<DockerDriver> {
    let driver: DockerDriver;
    ({ driver, proxy } = await proxiedDockerDriver(
      dataRoot.path,
      pauseBefore ? { pauseBefore } : {},
      CALL_TIMEOUT_MS,
    ));
    return driver;
  }

  async function unresponsive(work: Promise<unknown>) {
    const error = await work.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(isWorkcellError(error)).toBe(true);
    expect(domainReasonOf(error)).toBe("sandbox_engine_unresponsive");
    return error as { message: string; code: string; details?: Record<string, unknown> };
  }

  const exists = (name: string) =>
    access(join(workspace, "work", name)).then(
      () => true,
      () => false,
    );

  it("an exec whose create is not answered says the command did not run, and it did not", async () => {
    const driver = await proxied();
    proxy?.pause();
    const error = await unresponsive(
      driver.exec(sandbox, { cmd: ["touch", "created-marker"] }, signal()),
    );
    expect(error.code).toBe("unavailable");
    expect(error.details?.command_ran).toBe("no");
    expect(error.message).toContain("the command did not run");
    expect(error.message).toContain("DOCKER_CALL_TIMEOUT_SECONDS");
    proxy?.resume();
    // Through the real engine: still nothing there, and the sandbox works.
    const after = await healthy.exec(sandbox, { cmd: ["ls", "-a"] }, signal());
    expect(after.ok && after.result.exitCode).toBe(0);
    expect(await exists("created-marker")).toBe(false);
  });

  it("an exec whose start is not answered says the command may have run", async () => {
    const driver = await proxied((chunk) => EXEC_START.test(chunk.toString("latin1")));
    const error = await unresponsive(
      driver.exec(sandbox, { cmd: ["touch", "started-marker"] }, signal()),
    );
    expect(error.details?.command_ran).toBe("maybe");
    expect(error.message).toContain("may have run: check the Workdir");
  });

  it("an engine that stops answering mid-command ends the exec at its timeout: the command ran", async () => {
    const driver = await proxied();
    const pausedProxy = proxy as PausableProxy;
    const error = await unresponsive(
      driver.exec(
        sandbox,
        {
          cmd: ["sh", "-c", "echo started; touch running-marker; exec sleep 30"],
          timeoutMs: 2_000,
          // The command is running once its first output arrives: then the engine hangs.
          onStdout: () => pausedProxy.pause(),
        },
        signal(),
      ),
    );
    expect(error.details?.command_ran).toBe("yes");
    expect(error.message).toContain("check the Workdir");
    expect(await exists("running-marker")).toBe(true);
  });

  it("inspect, list and destroy end with the same error", async () => {
    const driver = await proxied();
    proxy?.pause();
    await unresponsive(driver.inspect(sandbox, signal()));
    await unresponsive(driver.list(nodeId, signal()));
    await unresponsive(driver.destroy(sandbox, signal()));
    proxy?.resume();
    // Nothing was removed behind our back: the real engine still has the sandbox.
    expect((await healthy.inspect(sandbox, signal()))?.running).toBe(true);
  });

  it("the caller's abort still wins over the bound: cancelled, not unresponsive", async () => {
    const driver = await proxied();
    proxy?.pause();
    const caller = new AbortController();
    const pending = driver.exec(sandbox, { cmd: ["true"] }, caller.signal);
    caller.abort(new Error("run cancelled"));
    const out = await pending;
    expect(out.ok && out.result.status).toBe("cancelled");
  });
});
