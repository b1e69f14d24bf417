// Sandbox lifecycle against the real engine and a throw-away Postgres, in one run:
//  (a) exec `true` through the manager vs a raw dockerode exec vs the `docker exec` CLI;
//  (b) warm acquire (live sandbox) vs cold acquire (create + start) vs `docker run -d`;
//  (c) 20 concurrent cold acquires of different scopes vs 20 × one cold acquire.
// Targets (issue 5): (a) ≤ 1.1× raw dockerode and well under the CLI; (b) warm ≤ 1% of cold.
import { execFile } from "node:child_process";
import { randomUUID } from "node:crypto";
import { chown, mkdir } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import Docker from "dockerode";
import { pino } from "pino";
import { containerCreateOptions } from "../../agent-host/sandbox/container/container-spec.ts";
import { DockerDriver } from "../../agent-host/sandbox/container/docker-driver.ts";
import { LABEL } from "../../agent-host/sandbox/instance/container-labels.ts";
import { SandboxManager } from "../../agent-host/sandbox/lifecycle/sandbox-manager.ts";
import { sandboxConfigSchema } from "../../agent-host/sandbox/sandbox-config.ts";
import type { SandboxHandle } from "../../agent-host/sandbox/sandbox-handle.ts";
import { nodes } from "../../shared/db/schema/nodes.ts";
import { uidDirname } from "../../shared/paths/uid-dirname.ts";
import { sandboxTestImage, startBenchStack } from "./bench-stack.ts";
import { benchTargets, interleaved, measure, report, rssNote, type Sample } from "./measure.ts";

const run = promisify(execFile);
const EXEC_RUNS = 200;
const COLD_RUNS = 20;
const CONCURRENT = 20;
const CONCURRENT_ROUNDS = 3;
const targets = benchTargets("sandbox-lifecycle", [
  { measure: "manager-exec-vs-dockerode", op: "<=", target: 1.1 },
  { measure: "warm-vs-cold-acquire", op: "<=", target: 0.01 },
]);
const UID = "bench";
const WORKDIR = "work";

const image = await sandboxTestImage();
const docker = new Docker();
const nodeId = `bench-${randomUUID().slice(0, 8)}`;
const stack = await startBenchStack({ maxConnections: CONCURRENT + 10 });
const { db, dataRoot } = stack;

try {
  await db.insert(nodes).values({ nodeId, dataPlaneUrl: "http://127.0.0.1:1" });

  const workspace = join(dataRoot, "users", uidDirname(UID), "workspace");
  await mkdir(join(workspace, WORKDIR), { recursive: true });
  await chown(workspace, 1000, 1000);
  await chown(join(workspace, WORKDIR), 1000, 1000);

  // The cold rounds hold all their sandboxes until the round ends (with the exec's one and
  // the warm-ups): the node's tmpfs budget (half the host's memory, 1 GiB per sandbox)
  // would refuse the later ones on a small machine. Empty tmpfs pin nothing.
  const defaults = sandboxConfigSchema.parse({ image });
  const held = 1 + COLD_RUNS + Math.ceil(COLD_RUNS / 10) + CONCURRENT;
  const config = sandboxConfigSchema.parse({
    image,
    tmpfsBudgetBytes: held * (defaults.tmpSizeBytes + defaults.homeSizeBytes),
  });
  const logger = pino({ level: "silent" });
  const driver = new DockerDriver({ docker, logger, dataRoot, nodeId, config });
  const manager = new SandboxManager({ db, driver, logger, nodeId, config });
  const newScope = () => ({ uid: UID, runtimeScopeId: randomUUID(), workdirPath: WORKDIR });
  const acquire = async (request = newScope()): Promise<SandboxHandle> => {
    const out = await manager.acquire(request, AbortSignal.timeout(120_000));
    if (!out.ok) throw new Error(`acquire refused: ${out.reason}`);
    return out.handle;
  };
  const destroyAll = async (handles: SandboxHandle[]) => {
    await Promise.all(
      handles.splice(0).map((h) => manager.destroy(h, AbortSignal.timeout(60_000))),
    );
  };

  // (a) exec of `true`
  const scope = newScope();
  const handle = await acquire(scope);
  const container = docker.getContainer(handle.instanceId);
  const rawExec = async () => {
    const exec = await container.exec({ Cmd: ["true"], AttachStdout: true, AttachStderr: true });
    const stream = await exec.start({});
    stream.resume();
    await new Promise((resolve) => stream.once("end", resolve));
    await exec.inspect();
  };
  const managerExec = async () => {
    const out = await manager.exec(handle, { cmd: ["true"] }, AbortSignal.timeout(30_000));
    if (!out.ok || out.result.exitCode !== 0) throw new Error("exec failed");
  };
  const cliExec = () => run("docker", ["exec", "-u", "1000:1000", handle.instanceId, "true"]);
  // Interleaved, so that drift on a shared machine hits all three alike.
  const [raw, ours, cli] = (await interleaved(
    [
      ["raw dockerode exec (baseline)", rawExec],
      ["manager.exec", managerExec],
      ["docker exec CLI", cliExec],
    ],
    EXEC_RUNS,
  )) as [Sample, Sample, Sample];
  report("exec `true` in a live sandbox", raw, [ours, cli]);
  targets.record("manager-exec-vs-dockerode", ours.medianMs / raw.medianMs);

  // (b) acquire: warm vs cold vs docker run -d (cold and CLI interleaved)
  const cold: SandboxHandle[] = [];
  const cliIds: string[] = [];
  const [coldSample, cliRun] = (await interleaved(
    [
      ["cold acquire (create + start)", async () => cold.push(await acquire())],
      [
        "docker run -d CLI (same hardening)",
        async () => {
          const { stdout } = await run("docker", dockerRunArgs(config, dataRoot));
          cliIds.push(stdout.trim());
        },
      ],
    ],
    COLD_RUNS,
  )) as [Sample, Sample];
  await destroyAll(cold);
  await Promise.all(cliIds.map((id) => docker.getContainer(id).remove({ force: true })));
  const warm = await measure("warm acquire (live sandbox)", () => acquire(scope), {
    runs: EXEC_RUNS,
  });
  coldSample.name = `${coldSample.name}, ${rssNote()}`;
  report("acquire", coldSample, [warm, cliRun]);
  console.log(
    `warm / cold = ${((warm.medianMs / coldSample.medianMs) * 100).toFixed(3)}% (target ≤ 1%)`,
  );
  targets.record("warm-vs-cold-acquire", warm.medianMs / coldSample.medianMs);

  // (c) 20 concurrent cold acquires vs 20 × one
  const totals: number[] = [];
  for (let round = 0; round < CONCURRENT_ROUNDS; round++) {
    const started = performance.now();
    const handles = await Promise.all(Array.from({ length: CONCURRENT }, () => acquire()));
    totals.push(performance.now() - started);
    await destroyAll(handles);
  }
  totals.sort((x, y) => x - y);
  const serial: Sample = {
    name: `${CONCURRENT} × one cold acquire (baseline)`,
    medianMs: coldSample.medianMs * CONCURRENT,
    p99Ms: coldSample.p99Ms * CONCURRENT,
    runs: COLD_RUNS,
  };
  const concurrent: Sample = {
    name: `${CONCURRENT} concurrent cold acquires, ${rssNote()}`,
    medianMs: totals[Math.floor(totals.length / 2)] ?? 0,
    p99Ms: totals[totals.length - 1] ?? 0,
    runs: CONCURRENT_ROUNDS,
  };
  report(`${CONCURRENT} cold acquires of different scopes, total time`, serial, [concurrent]);
} finally {
  await docker
    .listContainers({ all: true, filters: { label: [`${LABEL.nodeId}=${nodeId}`] } })
    .then((found) =>
      Promise.all(found.map((c) => docker.getContainer(c.Id).remove({ force: true }))),
    );
  await stack.stop();
}

/** `docker run -d` with the same hardening and mounts as a sandbox, for a fair baseline. */
function dockerRunArgs(
  config: ReturnType<typeof sandboxConfigSchema.parse>,
  root: string,
): string[] {
  const spec = containerCreateOptions(
    {
      sandboxId: "000000000000",
      generation: 1,
      uidDirname: uidDirname(UID),
      runtimeScopeId: randomUUID(),
      workdirPath: WORKDIR,
      nodeId,
      workspaceHostPath: join(root, "users", uidDirname(UID), "workspace"),
      skillsHostPath: join(root, "skills", "projections", uidDirname(UID)),
    },
    config,
  );
  const host = spec.HostConfig ?? {};
  return [
    "run",
    "-d",
    "--label",
    `${LABEL.nodeId}=${nodeId}`,
    "--user",
    "1000:1000",
    "--workdir",
    spec.WorkingDir ?? "/",
    ...(host.Mounts ?? []).flatMap((m) => [
      "--mount",
      `type=bind,source=${m.Source},target=${m.Target}${m.ReadOnly ? ",readonly" : ""}`,
    ]),
    ...Object.entries(host.Tmpfs ?? {}).flatMap(([path, options]) => [
      "--tmpfs",
      `${path}:${options}`,
    ]),
    "--read-only",
    "--cap-drop",
    "ALL",
    "--security-opt",
    "no-new-privileges:true",
    "--init",
    "--pids-limit",
    String(config.pidsLimit),
    "--memory",
    String(config.memoryBytes),
    "--cpus",
    String(config.nanoCpus / 1e9),
    "--network",
    config.networkMode,
    "--log-driver",
    "none",
    "--entrypoint",
    "sleep",
    image,
    "2147483647",
  ];
}
