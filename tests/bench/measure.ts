import { performance } from "node:perf_hooks";

export type Sample = { name: string; medianMs: number; p99Ms: number; runs: number };

export type MeasureOptions = {
  /** Timed repetitions (each one call of fn). */
  runs: number;
  /** Untimed calls first, so JIT and caches are warm for both sides alike. */
  warmupRuns?: number;
  /** Calls of fn per timed repetition, for operations far below a millisecond. */
  batch?: number;
  /** Awaited before each call, untimed (a state each call must start from). */
  before?: () => Promise<unknown>;
};

/** Times fn and returns the median and p99 per call in milliseconds. */
export async function measure(
  name: string,
  fn: () => unknown | Promise<unknown>,
  options: MeasureOptions,
): Promise<Sample> {
  const batch = options.batch ?? 1;
  for (let i = 0; i < (options.warmupRuns ?? Math.ceil(options.runs / 10)); i++) {
    await options.before?.();
    await fn();
  }
  const times: number[] = [];
  for (let r = 0; r < options.runs; r++) {
    await options.before?.();
    const start = performance.now();
    for (let i = 0; i < batch; i++) await fn();
    times.push((performance.now() - start) / batch);
  }
  times.sort((a, b) => a - b);
  const at = (q: number) => times[Math.min(times.length - 1, Math.floor(q * times.length))] ?? 0;
  return { name, medianMs: at(0.5), p99Ms: at(0.99), runs: options.runs };
}

/**
 * Prints one benchmark's table: every sample with its median and p99, and its ratio
 * against the baseline measured in the same run (timings on shared machines are noisy;
 * ratios are what is comparable across runs).
 */
export function report(title: string, baseline: Sample, samples: Sample[]): void {
  const format = (ms: number) => (ms < 0.01 ? `${(ms * 1000).toFixed(2)}µs` : `${ms.toFixed(3)}ms`);
  console.log(`\n## ${title}`);
  for (const s of [baseline, ...samples]) {
    const ratio = s === baseline ? "baseline" : `${(s.medianMs / baseline.medianMs).toFixed(2)}x`;
    console.log(
      `${s.name.padEnd(48)} median ${format(s.medianMs).padStart(10)}  p99 ${format(s.p99Ms).padStart(10)}  ${ratio}`,
    );
  }
}

/**
 * Times each fn once per round, the rounds interleaved so that drift in the machine's load
 * falls on every fn alike; a tenth as many untimed rounds first. Median and p99 per fn.
 */
export async function interleaved(
  fns: Array<[string, () => Promise<unknown>]>,
  rounds: number,
): Promise<Sample[]> {
  const times = fns.map(() => [] as number[]);
  for (let round = -Math.ceil(rounds / 10); round < rounds; round++) {
    for (const [i, [, fn]] of fns.entries()) {
      const started = performance.now();
      await fn();
      if (round >= 0) times[i]?.push(performance.now() - started);
    }
  }
  return fns.map(([name], i) => summarize(name, times[i] ?? []));
}

/** Median and p99 of timings in milliseconds (sorted in place). */
export function summarize(name: string, times: number[]): Sample {
  const sorted = times.sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0;
  return { name, medianMs: at(0.5), p99Ms: at(0.99), runs: times.length };
}

/**
 * This process's resident memory, `RSS <n> MB`, printed beside a cold figure: a fork of
 * the process costs in proportion to it (decision 0119).
 */
export function rssNote(): string {
  return `RSS ${Math.round(process.memoryUsage().rss / 2 ** 20)} MB`;
}

export type TargetOp = "<=" | ">=";

/**
 * One target's summary line, in the one format every bench ends with (issue 41), so a
 * script can check them all: `target <bench>/<measure>: <value>x <op> <target>x met|MISSED`.
 * The value is compared as printed. Returns whether it was met.
 */
export function printTarget(
  bench: string,
  measure: string,
  value: number,
  op: TargetOp,
  target: number,
): boolean {
  // Two decimals, three below 0.1 (a target such as 0.05 needs them).
  const digits = Math.abs(value) < 0.1 ? 3 : 2;
  const shown = Number(value.toFixed(digits));
  const met = op === "<=" ? shown <= target : shown >= target;
  const targetText = Number.isInteger(target) ? target.toFixed(1) : String(target);
  console.log(
    `target ${bench}/${measure}: ${shown.toFixed(digits)}x ${op} ${targetText}x ${met ? "met" : "MISSED"}`,
  );
  return met;
}

/** The summary line of a target this run could not measure, with why (never no line at all). */
export function printTargetSkipped(bench: string, measure: string, reason: string): void {
  console.log(`target ${bench}/${measure}: SKIPPED (${reason})`);
}

export type TargetSpec = { measure: string; op: TargetOp; target: number };

export type BenchTargets = {
  /** The measured value (a ratio) of a declared target. */
  record(measure: string, value: number): void;
  /** Why a declared target cannot be measured in this run. */
  skip(measure: string, reason: string): void;
};

/**
 * The targets a bench declares up front. Each gets exactly one summary line when the
 * process exits, whatever ends it (the bench's end, a thrown error, process.exit): its
 * value and met|MISSED, or SKIPPED with why. So a bench that fails half-way still says
 * which of its lines it could not measure, never nothing.
 */
export function benchTargets(bench: string, specs: readonly TargetSpec[]): BenchTargets {
  const values = new Map<string, number>();
  const reasons = new Map<string, string>();
  const declared = (measure: string) => {
    if (!specs.some((spec) => spec.measure === measure)) {
      throw new Error(`${bench} declares no target ${measure}`);
    }
  };
  process.once("exit", (code) => {
    console.log("");
    for (const { measure, op, target } of specs) {
      const value = values.get(measure);
      if (value !== undefined && Number.isFinite(value)) {
        printTarget(bench, measure, value, op, target);
        continue;
      }
      const stopped = code === 0 ? "not measured" : `the bench stopped (exit ${code}) before it`;
      printTargetSkipped(bench, measure, reasons.get(measure) ?? stopped);
    }
  });
  return {
    record(measure, value) {
      declared(measure);
      values.set(measure, value);
    },
    skip(measure, reason) {
      declared(measure);
      reasons.set(measure, reason);
    },
  };
}
