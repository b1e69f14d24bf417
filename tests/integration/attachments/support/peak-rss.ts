import { readFileSync, writeFileSync } from "node:fs";

/** Resets a process's peak resident memory (VmHWM) to its current RSS. */
export function resetPeakRss(pid: number): void {
  writeFileSync(`/proc/${pid}/clear_refs`, "5");
}

/** A process's peak resident memory since start or the last reset, in bytes. */
export function peakRssBytes(pid: number): number {
  const kb = /^VmHWM:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1];
  if (kb === undefined) throw new Error("VmHWM missing from /proc/<pid>/status");
  return Number(kb) * 1024;
}
