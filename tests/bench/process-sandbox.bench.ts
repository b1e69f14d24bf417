// The process sandbox tier against its baselines, in one run (issue 20):
//  (a) process-tier exec of `true` vs a bare `bwrap --unshare-all … true`   target ≤ 1.3
//  (b) process-tier exec vs container-tier exec of `true` (same run)         target ≤ 0.3
//  (c) process-tier cold acquire vs container-tier cold acquire              target ≤ 0.2
//  (d) process-tier exec vs the same command through @anthropic-ai/sandbox-runtime (srt,
//      the nearest peer library: its per-command wrap, then the spawn)      target ≤ 0.5
// The process tier runs with its cgroup limits, seccomp filter and mount verification on;
// srt with its defaults (no network, writes to the Workdir and /tmp) and no cgroup limits.
// The line is per-exec latency. An agent's exec follows a model response, so the
// generation's pre-built sandbox (decision 0088) is ready by then: each process exec, and
// each bare bwrap it is compared with, is timed only once that standby is ready (awaited
// untimed, so nothing builds in the background while either is timed). The same execs
// back to back, which then also wait for the next standby's build, are printed as an
// informational line.
import { execFile, spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { chown, mkdir, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { SandboxManager as SrtSandbox } from "@anthropic-ai/sandbox-runtime";
import Docker from "dockerode";
import { pino } from "pino";
import { DockerDriver } from "../../agent-host/sandbox/container/docker-driver.ts";
import type { SandboxDriver } from "../../agent-host/sandbox/driver.ts";
import { LABEL } from "../../agent-host/sandbox/instance/container-labels.ts";
import { SandboxManager } from "../../agent-host/sandbox/lifecycle/sandbox-manager.ts";
import {
  type ProcessDriver,
  processDriverFrom,
} from "../../agent-host/sandbox/process/process-driver.ts";
import { processPreflight } from "../../agent-host/sandbox/process/process-preflight.ts";
import type { SandboxCgroups } from "../../agent-host/sandbox/process/sandbox-cgroups.ts";
import { sandboxConfigSchema } from "../../agent-host/sandbox/sandbox-config.ts";
import type { SandboxHandle } from "../../agent-host/sandbox/sandbox-handle.ts";
import type { SandboxTier } from "../../agent-host/sandbox/sandbox-tier.ts";
import { TieredDriver } from "../../agent-host/sandbox/tiered-driver.ts";
import { nodes } from "../../shared/db/schema/nodes.ts";
import { uidDirname } from "../../shared/paths/uid-dirname.ts";
import { removeContainersLabelled } from "../support/docker.ts";
import { busyboxRuntimeDir } from "../support/process-tier.ts";
import { sandboxTestImage, startBenchStack } from "./bench-stack.ts";
import { benchTargets, measure, report, rssNote } from "./measure.ts";

const run = promisify(execFile);
const EXEC_RUNS = 60;
const COLD_RUNS = 10;
const targets = benchTargets("process-sandbox", [
  { measure: "exec-vs-bare-bwrap", op: "<=", target: 1.3 },
  { measure: "exec-vs-container-exec", op: "<=", target: 0.3 },
  { measure: "cold-acquire-vs-container", op: "<=", target: 0.2 },
  { measure: "exec-vs-srt", op: "<=", target: 0.5 },
]);
const UID = "bench";
const WORKDIR = "work";

const image = await sandboxTestImage();
const docker = new Docker();
const nodeId = `bench-${randomUUID().slice(0, 8)}`;
const stack = await startBenchStack({ maxConnections: 20 });
const { db, dataRoot } = stack;
const stateDir = join(tmpdir(), `workcell-bench-process-${randomUUID().slice(0, 8)}`);
const logger = pino({ level: "silent" });
let processDriver: ProcessDriver | undefined;
let cgroups: SandboxCgroups | undefined;

try {
  await db.insert(nodes).values({ nodeId, dataPlaneUrl: "http://127.0.0.1:1" });
  const workspace = join(dataRoot, "users", uidDirname(UID), "workspace");
  await mkdir(join(workspace, WORKDIR), { recursive: true });
  await chown(workspace, 1000, 1000);
  await chown(join(workspace, WORKDIR), 1000, 1000);

  const config = sandboxConfigSchema.parse({ image });
  const runtimeDir = await busyboxRuntimeDir();
  const found = await processPreflight({ stateDir, cgroupParent: `workcell-bench/${nodeId}` });
  if (!found.ready) throw new Error(`process tier not ready: ${found.missing}`);
  cgroups = found.parts.cgroups;
  processDriver = processDriverFrom(found.parts, {
    logger,
    dataRoot,
    runtimeDir,
    config,
  });
  const drivers = new Map<SandboxTier, SandboxDriver>([
    ["process", processDriver],
    ["container", new DockerDriver({ docker, logger, dataRoot, nodeId, config })],
  ]);
  const manager = new SandboxManager({
    db,
    driver: new TieredDriver(drivers, []),
    logger,
    nodeId,
    config,
  });
  const acquire = async (tier: SandboxTier): Promise<SandboxHandle> => {
    const out = await manager.acquire(
      { uid: UID, runtimeScopeId: randomUUID(), workdirPath: WORKDIR, tier },
      AbortSignal.timeout(120_000),
    );
    if (!out.ok) throw new Error(`acquire refused: ${out.reason}`);
    return out.handle;
  };
  const execTrue = (handle: SandboxHandle) => async () => {
    const out = await manager.exec(handle, { cmd: ["true"] }, AbortSignal.timeout(60_000));
    if (!out.ok || out.result.exitCode !== 0) throw new Error("exec failed");
  };

  const processHandle = await acquire("process");
  const containerHandle = await acquire("container");
  const processId = processHandle.instanceId;
  if (processId === null) throw new Error("the process generation has no container id");
  // Untimed: the generation's next sandbox is built (it is started once an exec returned).
  const standbyReady = () => processDriver?.standbyReady(processId) ?? Promise.resolve();
  const bareBwrap = await measure(
    "bare bwrap --unshare-all … true",
    () =>
      run("bwrap", [
        "--unshare-all",
        "--ro-bind",
        runtimeDir,
        "/runtime",
        "--",
        "/runtime/usr/bin/true",
      ]),
    { runs: EXEC_RUNS, before: standbyReady },
  );
  const processExec = await measure("process-tier exec true (manager)", execTrue(processHandle), {
    runs: EXEC_RUNS,
    before: standbyReady,
  });
  const backToBack = await measure(
    "process-tier exec true, back to back (info)",
    execTrue(processHandle),
    { runs: EXEC_RUNS },
  );
  await standbyReady();
  const containerExec = await measure(
    "container-tier exec true (manager)",
    execTrue(containerHandle),
    { runs: EXEC_RUNS },
  );
  report("(a) exec of `true`: process tier vs bare bwrap (target ≤ 1.3)", bareBwrap, [processExec]);
  report(
    "(info) back to back: each exec also waits for the previous one's next standby",
    bareBwrap,
    [backToBack],
  );
  report("(b) exec of `true`: process tier vs container tier (target ≤ 0.3)", containerExec, [
    processExec,
  ]);
  targets.record("exec-vs-bare-bwrap", processExec.medianMs / bareBwrap.medianMs);
  targets.record("exec-vs-container-exec", processExec.medianMs / containerExec.medianMs);
  // srt is a peer library under test here, not ours: if it fails, the line says why and
  // the cold-acquire line below still runs.
  await measureSrt(join(workspace, WORKDIR)).then(
    (srtExec) => {
      report("(d) exec of `true`: process tier vs srt (target ≤ 0.5)", srtExec, [processExec]);
      targets.record("exec-vs-srt", processExec.medianMs / srtExec.medianMs);
    },
    (error: unknown) => {
      console.error(`\n## (d) srt could not be measured: ${(error as Error).message}`);
      targets.skip("exec-vs-srt", `srt could not be measured: ${(error as Error).message}`);
      process.exitCode = 1;
    },
  );

  const created: SandboxHandle[] = [];
  const cold = (tier: SandboxTier) => async () => {
    created.push(await acquire(tier));
  };
  // Each cold sandbox is destroyed before the next (untimed): kept, eleven of them passed
  // the user's live-sandbox bound and the node's memory budget (issue 37 item 1), and the
  // acquire was refused sandbox_memory_budget.
  const destroyCreated = async () => {
    for (const h of created.splice(0)) await manager.destroy(h, AbortSignal.timeout(60_000));
  };
  const coldRuns = { runs: COLD_RUNS, warmupRuns: 1, before: destroyCreated };
  const containerCold = await measure("container-tier cold acquire", cold("container"), coldRuns);
  const processCold = await measure("process-tier cold acquire", cold("process"), coldRuns);
  for (const s of [containerCold, processCold]) s.name = `${s.name}, ${rssNote()}`;
  report("(c) cold acquire: process tier vs container tier (target ≤ 0.2)", containerCold, [
    processCold,
  ]);
  targets.record("cold-acquire-vs-container", processCold.medianMs / containerCold.medianMs);
  for (const h of [...created, processHandle, containerHandle]) {
    await manager.destroy(h, AbortSignal.timeout(60_000));
  }
} catch (error) {
  // Printed here: a cleanup below failing (a generation still mounted) would hide it.
  console.error("process-sandbox bench failed:", error);
  process.exitCode = 1;
} finally {
  await SrtSandbox.reset().catch(() => {});
  await removeContainersLabelled(docker, LABEL.nodeId, nodeId);
  // Generations a failed run left behind: unmounted before their directory is removed.
  for (const name of await readdir(stateDir).catch(() => [])) {
    const c = await processDriver
      ?.inspect({ instanceId: name, tier: "process" }, AbortSignal.timeout(30_000))
      .catch(() => undefined);
    if (c) await processDriver?.destroy(c, AbortSignal.timeout(30_000)).catch(() => {});
  }
  await rm(stateDir, { recursive: true, force: true });
  await cgroups?.removeParent().catch(() => {});
  await stack.stop();
}

/**
 * srt's per-command cost as its README uses it: initialize once (its proxies, like our
 * acquire), then per command wrapWithSandboxArgv (which also scans the cwd for files it
 * must protect) and a spawn of what it returned, until the command exits.
 */
async function measureSrt(cwd: string) {
  await SrtSandbox.initialize({
    network: { allowedDomains: [], deniedDomains: [] },
    filesystem: { denyRead: [], allowWrite: [cwd, "/tmp"], denyWrite: [] },
  });
  const once = async () => {
    const signal = AbortSignal.timeout(60_000);
    const { argv, env } = await SrtSandbox.wrapWithSandboxArgv(
      "true",
      undefined,
      undefined,
      signal,
      cwd,
    );
    const [file, ...args] = argv;
    if (!file) throw new Error("srt returned no command");
    let stderr = "";
    const code = await new Promise<number | null>((resolve, reject) => {
      const child = spawn(file, args, { cwd, env, stdio: ["ignore", "ignore", "pipe"], signal });
      child.stderr?.on("data", (chunk: Buffer) => {
        stderr += chunk.toString("utf8");
      });
      child.once("error", reject);
      child.once("close", resolve);
    });
    if (code !== 0) throw new Error(`srt exec of true exited ${code}: ${stderr.trim()}`);
  };
  return measure("srt exec true (wrap + spawn)", once, { runs: EXEC_RUNS });
}
