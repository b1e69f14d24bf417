// Throughput of new-thread runs on the process tier (issue 41, item 3), on the local
// Workcell served over HTTP in this process. First one new-thread run at a time (median
// submit → run.completed: one run's latency L); then N = 100 and N = 500 runs of `true`,
// each on a new thread of its own project (so no two share a Workdir's Execution Lease),
// all submitted at once, 4 per user (DEFAULT_USER_LIMITS.max_concurrent_runs: none waits
// for its user). runs/s over the whole batch is compared with what the worker's slots
// could do at that latency: slots / L. Targets: ≥ 0.7 of it at N = 100, and at N = 500.
// Threads are created before the clock starts (the runs are timed, not the API's inserts).
// Beside each batch: the whole machine's CPU per run, the throughput its cores allow, and
// the cores the target needs at that CPU; then the N = 100 batch again at 1, 2, 4 and 8
// worker slots (decision 0191).
import Docker from "dockerode";
import { DEFAULT_WORKER_CONCURRENCY } from "../../shared/env/agent-host-env.ts";
import { DEFAULT_USER_LIMITS } from "../../shared/limits/user-limits.ts";
import { type Api, type BenchStack, startBenchStack } from "./local-stack-bench.ts";
import { type CpuSpent, cpuSince, markCpu } from "./machine-cpu.ts";
import { benchTargets, rssNote } from "./measure.ts";

const SIZES = (process.env.BENCH_THROUGHPUT_N ?? "100,500").split(",").map(Number);
const SINGLE_RUNS = 12;
const PROCESS = { sandbox: "process" } as const;
const RUNS_PER_USER = DEFAULT_USER_LIMITS.max_concurrent_runs;
const SLOTS = DEFAULT_WORKER_CONCURRENCY;
const SWEEP_N = 100;
const SWEEP_SLOTS = (process.env.BENCH_THROUGHPUT_SLOTS ?? "1,2,4,8").split(",").map(Number);

/** Runs/s as a share of slots / latency (issue 41, item 3). */
const TARGET = 0.7;

const targets = benchTargets("run-throughput", [
  { measure: "new-thread-process-n100", op: ">=", target: TARGET },
  { measure: "new-thread-process-n500", op: ">=", target: TARGET },
]);

const docker = new Docker();
const bench = await startBenchStack(docker, "throughput-single");
try {
  // One at a time: the latency the slots are compared with (the first run untimed).
  const single: number[] = [];
  let singleCpuMs = 0;
  for (let i = -1; i < SINGLE_RUNS; i++) {
    const { threadId } = await bench.api.newThread();
    const mark = markCpu();
    const run = await bench.api.run(threadId, "true", PROCESS);
    if (run.status !== "succeeded") throw new Error(`a run ended ${run.status}`);
    if (i >= 0) {
      single.push(run.terminalMs);
      singleCpuMs += cpuSince(mark).busyMs;
    }
  }
  single.sort((a, b) => a - b);
  const latencyMs = single[Math.floor(single.length / 2)] ?? 0;
  const ideal = SLOTS / (latencyMs / 1000);
  console.log(
    `\n## new-thread runs of \`true\`, process tier, ${SLOTS} worker slots (${rssNote()})`,
  );
  console.log(
    `one run at a time: median ${latencyMs.toFixed(0)} ms → slots / latency = ${ideal.toFixed(2)} runs/s; the machine's CPU per run ${(singleCpuMs / SINGLE_RUNS).toFixed(0)} ms`,
  );
  for (const n of SIZES) {
    const batch = await runBatch(bench, n, `tp-${n}`);
    console.log(
      `N = ${String(n).padStart(3)}: ${batch.seconds.toFixed(1)} s, ${batch.rate.toFixed(2)} runs/s = ${(batch.rate / ideal).toFixed(2)}x slots / latency; p50 submit → terminal ${batch.p50.toFixed(0)} ms (${rssNote()})`,
    );
    console.log(`        ${batch.cpuNote}`);
    console.log(`        ${ceilingNote(n, batch.machine, ideal)}`);
    targets.record(`new-thread-process-n${n}`, batch.rate / ideal);
  }
} finally {
  await bench.stop();
}

// Slots against the machine (decision 0191): the same batch on a stack of its own per slot
// count. Throughput rises with slots while cores are left, and stops where they are not.
console.log(
  `\n## N = ${SWEEP_N} new-thread runs at ${SWEEP_SLOTS.join(", ")} worker slots (a stack each; a node runs one more for an idle user)`,
);
for (const slots of SWEEP_SLOTS) {
  const stack = await startBenchStack(docker, `throughput-slots-${slots}`, {
    workerConcurrency: slots,
  });
  try {
    await stack.api.run((await stack.api.newThread()).threadId, "true", PROCESS);
    const batch = await runBatch(stack, SWEEP_N, `tp-slots-${slots}`);
    console.log(
      `${String(slots).padStart(2)} slot${slots === 1 ? "" : "s"}: ${batch.rate.toFixed(2)} runs/s; machine ${(batch.machine.busyShare * 100).toFixed(0)} % busy, ${(batch.machine.busyMs / SWEEP_N).toFixed(1)} ms of CPU per run`,
    );
  } finally {
    await stack.stop();
  }
}

type Batch = {
  seconds: number;
  rate: number;
  p50: number;
  cpuNote: string;
  machine: CpuSpent;
};

/**
 * N runs of `true`, each on a new thread of its own project (so no two share a Workdir's
 * Execution Lease), 4 per user, all submitted at once; threads made before the clock.
 */
async function runBatch(stack: BenchStack, n: number, userPrefix: string): Promise<Batch> {
  const users = Math.ceil(n / RUNS_PER_USER);
  const apis = await Promise.all(
    Array.from({ length: users }, (_, u) => stack.apiFor(`${userPrefix}-${u}`)),
  );
  const threads = await Promise.all(
    Array.from({ length: n }, async (_, i) => {
      const api = apis[i % users] as Api;
      return { api, threadId: (await api.newThread()).threadId };
    }),
  );
  const started = performance.now();
  const cpu = { process: process.cpuUsage(), main: process.threadCpuUsage() };
  const loop = performance.eventLoopUtilization();
  const machine = markCpu();
  const runs = await Promise.all(
    threads.map(async ({ api, threadId }) => {
      const { events } = await api.start(threadId, "true", undefined, PROCESS);
      return events;
    }),
  );
  const ends = await Promise.all(runs);
  const seconds = (performance.now() - started) / 1000;
  const spent = cpuSince(machine);
  const failed = ends.filter((e) => e.status !== "succeeded");
  if (failed.length > 0) {
    throw new Error(
      `${failed.length} of ${n} runs did not succeed: ${failed[0]?.status} ${JSON.stringify(failed[0]?.error)}`,
    );
  }
  return {
    seconds,
    rate: n / seconds,
    p50: [...ends.map((e) => e.terminalMs)].sort((a, b) => a - b)[Math.floor(n / 2)] ?? 0,
    cpuNote: cpuNote(n, cpu, performance.eventLoopUtilization(loop).utilization),
    machine: spent,
  };
}

/**
 * Whether this process's one event loop is the ceiling (decisions 0157, 0182): its
 * utilization over the batch, and the CPU spent per run on the main thread and in the
 * whole process (worker threads included; the bench's own HTTP client is in both).
 */
function cpuNote(
  runs: number,
  since: { process: NodeJS.CpuUsage; main: NodeJS.CpuUsage },
  utilization: number,
): string {
  const ms = (u: NodeJS.CpuUsage) => (u.user + u.system) / 1000 / runs;
  return [
    `event loop ${(utilization * 100).toFixed(0)} % busy`,
    `CPU per run: main thread ${ms(process.threadCpuUsage(since.main)).toFixed(1)} ms`,
    `process ${ms(process.cpuUsage(since.process)).toFixed(1)} ms`,
  ].join(", ");
}

/**
 * What the machine could do at the CPU a run cost it in the batch (decision 0191): all its
 * cores busy, cores ÷ CPU per run runs/s, as a share of slots / latency; and how many cores
 * the 0.7x target needs at that CPU per run. A run's CPU counts every process on the
 * machine (the sandboxes, PostgreSQL, the kernel's workers), so other load inflates it.
 */
function ceilingNote(runs: number, spent: CpuSpent, ideal: number): string {
  const perRunMs = spent.busyMs / runs;
  const ceiling = spent.cores / (perRunMs / 1000);
  return [
    `machine: ${spent.cores} cores ${(spent.busyShare * 100).toFixed(0)} % busy, ${perRunMs.toFixed(1)} ms of CPU per run`,
    `the main thread waited ${(spent.waitedMs / runs).toFixed(1)} ms per run for a core`,
    `all cores busy: ${ceiling.toFixed(1)} runs/s = ${(ceiling / ideal).toFixed(2)}x slots / latency`,
    `${TARGET}x needs ${((TARGET * ideal * perRunMs) / 1000).toFixed(1)} cores at this CPU per run`,
  ].join("; ");
}
