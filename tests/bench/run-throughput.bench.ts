// Throughput of new-thread runs on the process tier (issue 41, item 3), on the local
// Workcell served over HTTP in this process. First one new-thread run at a time (median
// submit → run.completed: one run's latency L); then N = 100 and N = 500 runs of `true`,
// each on a new thread of its own project (so no two share a Workdir's Execution Lease),
// all submitted at once, 4 per user (DEFAULT_USER_LIMITS.max_concurrent_runs: none waits
// for its user). runs/s over the whole batch is compared with what the worker's slots
// could do at that latency: slots / L. Targets: ≥ 0.7 of it at N = 100, and at N = 500.
// Threads are created before the clock starts (the runs are timed, not the API's inserts).
import Docker from "dockerode";
import { DEFAULT_WORKER_CONCURRENCY } from "../../shared/env/agent-host-env.ts";
import { DEFAULT_USER_LIMITS } from "../../shared/limits/user-limits.ts";
import { type Api, startBenchStack } from "./local-stack-bench.ts";
import { benchTargets, rssNote } from "./measure.ts";

const SIZES = (process.env.BENCH_THROUGHPUT_N ?? "100,500").split(",").map(Number);
const SINGLE_RUNS = 12;
const PROCESS = { sandbox: "process" } as const;
const RUNS_PER_USER = DEFAULT_USER_LIMITS.max_concurrent_runs;
const SLOTS = DEFAULT_WORKER_CONCURRENCY;

const targets = benchTargets("run-throughput", [
  { measure: "new-thread-process-n100", op: ">=", target: 0.7 },
  { measure: "new-thread-process-n500", op: ">=", target: 0.7 },
]);

const docker = new Docker();
const bench = await startBenchStack(docker, "throughput-single");
try {
  // One at a time: the latency the slots are compared with (the first run untimed).
  const single: number[] = [];
  for (let i = -1; i < SINGLE_RUNS; i++) {
    const { threadId } = await bench.api.newThread();
    const run = await bench.api.run(threadId, "true", PROCESS);
    if (run.status !== "succeeded") throw new Error(`a run ended ${run.status}`);
    if (i >= 0) single.push(run.terminalMs);
  }
  single.sort((a, b) => a - b);
  const latencyMs = single[Math.floor(single.length / 2)] ?? 0;
  const ideal = SLOTS / (latencyMs / 1000);
  console.log(
    `\n## new-thread runs of \`true\`, process tier, ${SLOTS} worker slots (${rssNote()})`,
  );
  console.log(
    `one run at a time: median ${latencyMs.toFixed(0)} ms → slots / latency = ${ideal.toFixed(2)} runs/s`,
  );
  for (const n of SIZES) {
    const users = Math.ceil(n / RUNS_PER_USER);
    const apis = await Promise.all(
      Array.from({ length: users }, (_, u) => bench.apiFor(`tp-${n}-${u}`)),
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
    const runs = await Promise.all(
      threads.map(async ({ api, threadId }) => {
        const { events } = await api.start(threadId, "true", undefined, PROCESS);
        return events;
      }),
    );
    const ends = await Promise.all(runs);
    const seconds = (performance.now() - started) / 1000;
    const failed = ends.filter((e) => e.status !== "succeeded");
    if (failed.length > 0) {
      throw new Error(
        `${failed.length} of ${n} runs did not succeed: ${failed[0]?.status} ${JSON.stringify(failed[0]?.error)}`,
      );
    }
    const rate = n / seconds;
    const p50 = [...ends.map((e) => e.terminalMs)].sort((a, b) => a - b)[Math.floor(n / 2)] ?? 0;
    console.log(
      `N = ${String(n).padStart(3)}: ${seconds.toFixed(1)} s, ${rate.toFixed(2)} runs/s = ${(rate / ideal).toFixed(2)}x slots / latency; p50 submit → terminal ${p50.toFixed(0)} ms (${rssNote()})`,
    );
    console.log(`        ${cpuNote(n, cpu, performance.eventLoopUtilization(loop).utilization)}`);
    targets.record(`new-thread-process-n${n}`, rate / ideal);
  }
} finally {
  await bench.stop();
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
