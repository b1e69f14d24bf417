import { type ChildProcess, spawn } from "node:child_process";
import { createInterface } from "node:readline";
import type { LeaseChildArgs } from "./lease-child.ts";

export type LeaseChild = {
  process: ChildProcess;
  /** The next JSON line whose `event` is `event` (earlier lines are skipped). */
  next(event: string): Promise<Record<string, unknown>>;
  release(): void;
  kill9(): Promise<void>;
  exited: Promise<void>;
};

/** Starts lease-child.ts as a separate agent-host-like process. */
export function spawnLeaseChild(args: LeaseChildArgs): LeaseChild {
  const child = spawn(
    process.execPath,
    [new URL("./lease-child.ts", import.meta.url).pathname, JSON.stringify(args)],
    { stdio: ["pipe", "pipe", "inherit"] },
  );
  const lines = createInterface({ input: child.stdout as NodeJS.ReadableStream });
  const queue: Record<string, unknown>[] = [];
  const waiters: Array<() => void> = [];
  lines.on("line", (line) => {
    queue.push(JSON.parse(line) as Record<string, unknown>);
    for (const wake of waiters.splice(0)) wake();
  });
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  return {
    process: child,
    exited,
    async next(event) {
      for (;;) {
        const at = queue.findIndex((l) => l.event === event);
        if (at >= 0) return queue.splice(0, at + 1)[at] as Record<string, unknown>;
        if (child.exitCode !== null || child.signalCode !== null) {
          throw new Error(`lease child exited before '${event}'`);
        }
        await Promise.race([new Promise<void>((resolve) => waiters.push(resolve)), exited]);
      }
    },
    release() {
      child.stdin?.write("release\n");
    },
    async kill9() {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
      await exited;
    },
  };
}
