// The whole machine's CPU over a stretch of a benchmark (decision 0191): a throughput that
// stops rising with worker slots is either Workcell serialising its runs or the machine
// out of cores, and only the machine's own accounting tells the two apart. Read from
// procfs: /proc/stat for every core (this process, its sandboxes, PostgreSQL, the kernel's
// workers), /proc/thread-self/schedstat for how long the calling thread waited for a core.

import { readFileSync } from "node:fs";

/** Clock ticks per second of /proc/stat (USER_HZ: 100 on every Linux architecture Node runs on). */
const USER_HZ = 100;

export type CpuMark = {
  /** Busy time summed over all cores (everything but idle and iowait), in ms. */
  readonly busyMs: number;
  /** All time summed over all cores, in ms. */
  readonly totalMs: number;
  /** Time the calling thread spent runnable but waiting for a core, in ms. */
  readonly waitedMs: number;
  readonly cores: number;
};

export type CpuSpent = {
  /** Busy CPU summed over all cores since the mark, in ms. */
  readonly busyMs: number;
  /** Busy share of all cores since the mark, 0..1. */
  readonly busyShare: number;
  /** How long the calling thread waited for a core since the mark, in ms. */
  readonly waitedMs: number;
  readonly cores: number;
};

/** A mark to measure from: call it on the thread whose waits matter (the main thread). */
export function markCpu(): CpuMark {
  const lines = readFileSync("/proc/stat", "utf8").split("\n");
  // cpu  user nice system idle iowait irq softirq steal guest guest_nice
  const all = (lines[0] ?? "").trim().split(/\s+/).slice(1, 9).map(Number);
  const total = all.reduce((sum, ticks) => sum + ticks, 0);
  const idle = (all[3] ?? 0) + (all[4] ?? 0);
  // schedstat: ns on a core, ns runnable but waiting, timeslices
  const waitedNs = Number(readFileSync("/proc/thread-self/schedstat", "utf8").split(" ")[1]);
  return {
    busyMs: ((total - idle) * 1000) / USER_HZ,
    totalMs: (total * 1000) / USER_HZ,
    waitedMs: waitedNs / 1e6,
    cores: lines.filter((line) => /^cpu\d+ /.test(line)).length,
  };
}

/** What the machine spent since `mark`. */
export function cpuSince(mark: CpuMark): CpuSpent {
  const now = markCpu();
  const busyMs = now.busyMs - mark.busyMs;
  const totalMs = now.totalMs - mark.totalMs;
  return {
    busyMs,
    busyShare: totalMs > 0 ? busyMs / totalMs : 0,
    waitedMs: now.waitedMs - mark.waitedMs,
    cores: now.cores,
  };
}
