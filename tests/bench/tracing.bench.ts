// Tracing overhead (issue 15): a warm run submit → terminal on the local stack over HTTP,
// with OpenTelemetry tracing on (the SDK's BatchSpanProcessor into an InMemorySpanExporter,
// W3C propagation through the SQS message) and off (the no-op tracer the entries use by
// default), in the same process and the same thread, each run the thread's next turn
// within the keep-warm window (its sandbox is reused: decision 0030). The stack gets one Tracing
// whose target is switched between blocks of runs (off, on, off, on, …), so both sides
// see the same machine load, sandbox and database. Target: on / off ≤ 1.05.
import Docker from "dockerode";
import { startBenchStack } from "./local-stack-bench.ts";
import { benchTargets, type Sample } from "./measure.ts";
import { switchedTracing } from "./switched-tracing.ts";

const BLOCKS = 6;
const RUNS_PER_BLOCK = 8;
const targets = benchTargets("tracing", [
  { measure: "warm-run-tracing-on", op: "<=", target: 1.05 },
]);
const UID = "bench-tracing";

const switched = switchedTracing();

const docker = new Docker();
const bench = await startBenchStack(docker, UID, { tracing: switched.tracing });
try {
  const { api } = bench;
  const { threadId } = await api.newThread();
  const runOnce = async () => {
    const times = await api.run(threadId, "true");
    if (times.status !== "succeeded") throw new Error(`a run ended ${times.status}`);
    return times.terminalMs;
  };
  // Warm-up: JIT, connections, and the thread's sandbox (kept warm between turns).
  for (let i = 0; i < 3; i++) await runOnce();

  const timings = { off: [] as number[], on: [] as number[] };
  for (let block = 0; block < BLOCKS; block++) {
    for (const side of ["off", "on"] as const) {
      switched.set(side === "on");
      for (let i = 0; i < RUNS_PER_BLOCK; i++) timings[side].push(await runOnce());
    }
  }
  switched.set(false);
  const spans = await switched.take();
  const perRun = spans.filter((s) => s.name === "run.execute").length;

  const sample = (name: string, ms: number[]): Sample => {
    const sorted = [...ms].sort((a, b) => a - b);
    const at = (q: number) =>
      sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0;
    return { name, medianMs: at(0.5), p99Ms: at(0.99), runs: ms.length };
  };
  const offSample = sample("warm run submit → terminal, tracing off", timings.off);
  const onSample = sample("warm run submit → terminal, tracing on", timings.on);
  console.log("\n## warm run submit → terminal: tracing on (in-memory exporter) vs off");
  for (const s of [offSample, onSample]) {
    console.log(
      `${s.name.padEnd(48)} median ${s.medianMs.toFixed(2).padStart(8)}ms  p99 ${s.p99Ms.toFixed(2).padStart(8)}ms  (${s.runs} runs)`,
    );
  }
  console.log(
    `spans exported while on: ${spans.length} (${perRun} traced runs, ${(spans.length / Math.max(perRun, 1)).toFixed(1)} spans per run)`,
  );
  if (perRun < BLOCKS * RUNS_PER_BLOCK) {
    throw new Error(`only ${perRun} runs were traced while tracing was on`);
  }
  console.log(
    `\ntracing on / off (median): ${(onSample.medianMs / offSample.medianMs).toFixed(3)}x (target <= 1.05); p99: ${(onSample.p99Ms / offSample.p99Ms).toFixed(3)}x`,
  );
  targets.record("warm-run-tracing-on", onSample.medianMs / offSample.medianMs);
} finally {
  await bench.stop();
  await switched.shutdown();
}
