// A run end to end on the local Workcell (issue 6): the real local stack started in this
// process (PostgreSQL, fauxqs, the agent-host with its run worker and Docker sandboxes) and
// served over HTTP on a loopback port, driven with fetch exactly as a client drives it:
// `POST /v1/threads/{id}/runs {input:"true"}` (shell model: the input is the command),
// then `GET /v1/runs/{id}/events` (SSE). Each run is timed from just before the POST to
// the first SSE event and to `run.completed`.
//
// Warm means the keep-warm window: when a root run ends, its execution tree's sandbox is
// kept for SANDBOX_KEEP_WARM_SECONDS (default 60 s; decision 0030), so the conversation's
// next turn reuses it. The "next turn" series measures that, and the number of sandbox
// containers Docker created during it (counted from Docker's events) is the evidence (one,
// for the untimed first turn). A run submitted while another run of the thread holds the
// sandbox is no longer a "warm" case to time: its command waits for the Execution Lease of
// the other run's command (docs/architecture.md §5), so it measures that command, not Workcell.
//  - cold: a new thread (same project, so its Workdir exists) for each run, in the container
//    tier and in the process tier (bubblewrap: no container is created at all);
//  - baseline: a raw dockerode exec of `/bin/sh -c true` as the sandbox user in a container
//    of the same image and hardening, created by this benchmark; for cold runs also the
//    raw lifecycle of such a container (create + start + exec + remove).
import { randomUUID } from "node:crypto";
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Docker from "dockerode";
import {
  containerCreateOptions,
  SANDBOX_USER,
} from "../../agent-host/sandbox/container/container-spec.ts";
import { sandboxConfigSchema } from "../../agent-host/sandbox/sandbox-config.ts";
import { countContainers, type RunTimes, startBenchStack } from "./local-stack-bench.ts";
import { benchTargets, measure, report, rssNote, type Sample } from "./measure.ts";
import { spanBreakdown } from "./run-span-breakdown.ts";
import { switchedTracing } from "./switched-tracing.ts";

const COLD_RUNS = 15;
const SAME_THREAD_RUNS = 20;
const EXEC_RUNS = 100;
const RAW_COLD_RUNS = 10;
// Issue 6's two lines; the container tier's new thread against a raw lifecycle is issue 41's.
const targets = benchTargets("run-e2e", [
  { measure: "next-turn-warm", op: "<=", target: 2.5 },
  { measure: "new-thread-process", op: "<=", target: 3 },
  // Issue 41 (item 2) asks the same ratio ≤ 2.0; the line above is issue 6's.
  { measure: "new-thread-process-issue-41", op: "<=", target: 2 },
  { measure: "new-thread-container-vs-raw-lifecycle", op: "<=", target: 1.2 },
]);
const UID = "bench";
const WORKDIR = "work";
/** Docker events arrive a little after the API call that caused them. */
const EVENTS_SETTLE_MS = 300;
const CONTAINER = { sandbox: "container" } as const;
const PROCESS = { sandbox: "process" } as const;

const docker = new Docker();
// Traced only during the process tier's new-thread series: where its time goes (issue 41).
const traced = switchedTracing();
const bench = await startBenchStack(docker, UID, { tracing: traced.tracing });
const containers = await countContainers(docker, bench.nodeId);
const scratch = await mkdtemp(join(tmpdir(), "workcell-bench-raw-"));
const rawContainers = new Set<string>();

try {
  const { api } = bench;

  // Baselines: containers of the same image and hardening as a sandbox (their mounts point
  // into a scratch directory), labelled so that no Workcell reconciler ever touches them.
  await mkdir(join(scratch, "workspace", WORKDIR), { recursive: true });
  await mkdir(join(scratch, "skills"), { recursive: true });
  const config = sandboxConfigSchema.parse({ image: bench.image });
  const createRaw = async () => {
    const spec = containerCreateOptions(
      {
        sandboxId: `bench-e2e-${randomUUID().slice(0, 8)}`,
        generation: 1,
        uidDirname: "bench",
        runtimeScopeId: randomUUID(),
        workdirPath: WORKDIR,
        nodeId: "bench-e2e-raw",
        workspaceHostPath: join(scratch, "workspace"),
        skillsHostPath: join(scratch, "skills"),
      },
      config,
    );
    const container = await docker.createContainer({
      ...spec,
      Labels: { "workcell.bench": "run-e2e" },
    });
    rawContainers.add(container.id);
    await container.start();
    return { container, workingDir: spec.WorkingDir };
  };
  const rawExec = async (raw: Awaited<ReturnType<typeof createRaw>>) => {
    const exec = await raw.container.exec({
      Cmd: ["/bin/sh", "-c", "true"],
      User: SANDBOX_USER,
      ...(raw.workingDir === undefined ? {} : { WorkingDir: raw.workingDir }),
      AttachStdout: true,
      AttachStderr: true,
    });
    const stream = await exec.start({});
    stream.resume();
    await new Promise((resolve) => stream.once("end", resolve));
    const info = await exec.inspect();
    if (info.ExitCode !== 0) throw new Error(`raw exec exited ${info.ExitCode}`);
  };
  const removeRaw = async (raw: Awaited<ReturnType<typeof createRaw>>) => {
    await raw.container.remove({ force: true });
    rawContainers.delete(raw.container.id);
  };

  const live = await createRaw();
  const exec = await measure("raw sandbox exec `true` (baseline)", () => rawExec(live), {
    runs: EXEC_RUNS,
  });
  await removeRaw(live);

  const { threadId: firstThread, projectId } = await api.newThread();
  const newThread = async () => (await api.newThread(projectId)).threadId;

  /** Runs `true` one after another (the first one untimed); counts sandboxes created. */
  const series = async (label: string, runs: number, next: () => Promise<RunTimes>) => {
    const first: number[] = [];
    const last: number[] = [];
    const createdBefore = containers.created();
    for (let i = -1; i < runs; i++) {
      const times = await next();
      if (times.status !== "succeeded")
        throw new Error(`a ${label} run ended ${times.status}: ${JSON.stringify(times.error)}`);
      // The first round warms up (JIT, connections, the project's Workdir): not counted.
      if (i >= 0) {
        first.push(times.firstEventMs);
        last.push(times.terminalMs);
      }
    }
    await new Promise((resolve) => setTimeout(resolve, EVENTS_SETTLE_MS));
    const median = [...last].sort((a, b) => a - b)[Math.floor(last.length / 2)] ?? 0;
    // The stack runs in this process: its RSS is the agent-host's (decision 0119).
    console.log(
      `  (${label}: ${runs} runs, median ${median.toFixed(0)} ms to terminal, ${rssNote()})`,
    );
    return {
      first: sample(`${label}: submit → first event`, first),
      last: sample(`${label}: submit → terminal`, last),
      created: containers.created() - createdBefore,
      runs: runs + 1,
    };
  };

  // Runs of one thread back to back: the next turn within the keep-warm window.
  const sameThread = await series("next turn (keep-warm window)", SAME_THREAD_RUNS, () =>
    api.run(firstThread, "true", CONTAINER),
  );

  const cold = await series("cold (new thread)", COLD_RUNS, async () =>
    api.run(await newThread(), "true", CONTAINER),
  );
  // The process tier (bubblewrap): a new thread's first run starts no container at all.
  traced.set(true);
  const processCold = await series("cold (new thread, process tier)", COLD_RUNS, async () =>
    api.run(await newThread(), "true", PROCESS),
  );
  traced.set(false);
  const processSpans = await traced.take();
  const processThread = await newThread();
  const processTurn = await series("next turn (process tier)", SAME_THREAD_RUNS, () =>
    api.run(processThread, "true", PROCESS),
  );
  if (processCold.created !== 0 || processTurn.created !== 0) {
    throw new Error("process-tier runs created containers");
  }

  const rawColdExec = await measure(
    "raw create + start + exec `true` + remove",
    async () => {
      const raw = await createRaw();
      await rawExec(raw);
      await removeRaw(raw);
    },
    { runs: RAW_COLD_RUNS, warmupRuns: 1 },
  );

  const title = "run `true` end to end over the local stack's HTTP API vs raw sandbox exec";
  report(title, exec, [
    sameThread.first,
    sameThread.last,
    cold.first,
    cold.last,
    processCold.first,
    processCold.last,
    processTurn.first,
    processTurn.last,
  ]);
  report("cold runs vs a raw container lifecycle", rawColdExec, [cold.first, cold.last]);

  const ratio = (s: Sample, base: Sample) =>
    `median ${(s.medianMs / base.medianMs).toFixed(1)}x, p99 ${(s.p99Ms / base.p99Ms).toFixed(1)}x`;
  console.log("\nend to end / raw sandbox exec (same run):");
  for (const s of [sameThread.last, cold.last, processCold.last, processTurn.last]) {
    console.log(`  ${s.name.padEnd(46)} ${ratio(s, exec)}`);
  }
  console.log(
    `  ${cold.last.name.padEnd(46)} ${ratio(cold.last, rawColdExec)} of a raw container lifecycle`,
  );
  console.log("\nnew thread, process tier: where a run's time goes (medians of its spans):");
  for (const line of spanBreakdown(processSpans, processCold.last.medianMs)) console.log(line);
  // The cold path's own cost: a new thread against the next turn of a warm one, same tier.
  console.log(
    `  new thread / next turn (process tier, what the cold path adds): ${(processCold.last.medianMs / processTurn.last.medianMs).toFixed(2)}x`,
  );
  console.log("\nsandbox containers Docker created (runs include the untimed first one):");
  for (const [name, s] of [
    ["next turn (keep-warm)", sameThread],
    ["cold (new thread)", cold],
  ] as const) {
    console.log(`  ${name.padEnd(28)} ${String(s.created).padStart(3)} for ${s.runs} runs`);
  }
  console.log(
    `\nnext turn within the keep-warm window / raw sandbox exec: ${(sameThread.last.medianMs / exec.medianMs).toFixed(2)}x (target <= 2.5)`,
  );
  console.log(
    sameThread.created <= 1
      ? "The thread's sandbox outlived each turn (keep-warm window): one create for the first turn only."
      : `The next turn did not always find the sandbox warm: ${sameThread.created} created for ${sameThread.runs} turns.`,
  );
  console.log(
    `new thread, process tier / raw container exec: ${(processCold.last.medianMs / exec.medianMs).toFixed(2)}x (target <= 3)`,
  );
  targets.record("next-turn-warm", sameThread.last.medianMs / exec.medianMs);
  targets.record("new-thread-process", processCold.last.medianMs / exec.medianMs);
  targets.record("new-thread-process-issue-41", processCold.last.medianMs / exec.medianMs);
  targets.record(
    "new-thread-container-vs-raw-lifecycle",
    cold.last.medianMs / rawColdExec.medianMs,
  );
} finally {
  containers.close();
  await bench.stop();
  await traced.shutdown();
  await Promise.all(
    [...rawContainers].map((id) =>
      docker
        .getContainer(id)
        .remove({ force: true })
        .catch(() => {}),
    ),
  );
  await rm(scratch, { recursive: true, force: true });
}

function sample(name: string, times: number[]): Sample {
  const sorted = [...times].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0;
  return { name, medianMs: at(0.5), p99Ms: at(0.99), runs: sorted.length };
}
