import { type ChildProcess, spawn } from "node:child_process";
import { createInterface } from "node:readline";

/** A Node child process that reports on stdout as one JSON object a line, each with an `event`. */
export type JsonLineChild = {
  process: ChildProcess;
  /** Resolves when the process has exited. */
  exited: Promise<void>;
  alive(): boolean;
  /** The next JSON line whose `event` is `event` (earlier lines are skipped). */
  next(event: string): Promise<Record<string, unknown>>;
  /** How many lines with this `event` have arrived (whether or not next() took them). */
  count(event: string): number;
  /** Writes one line to the child's stdin (how tests ask it to release, stop, …). */
  send(line: string): void;
  kill9(): Promise<void>;
};

/**
 * Starts `script` under this Node with `args` as its one argument (JSON), stderr
 * inherited. `name` says in errors which child exited before the line a test waited for.
 */
export function spawnJsonLineChild(script: URL, args: unknown, name: string): JsonLineChild {
  const child = spawn(process.execPath, [script.pathname, JSON.stringify(args)], {
    stdio: ["pipe", "pipe", "inherit"],
  });
  const lines = createInterface({ input: child.stdout as NodeJS.ReadableStream });
  const queue: Record<string, unknown>[] = [];
  const waiters: Array<() => void> = [];
  const counts = new Map<string, number>();
  lines.on("line", (line) => {
    const parsed = JSON.parse(line) as Record<string, unknown>;
    queue.push(parsed);
    counts.set(String(parsed.event), (counts.get(String(parsed.event)) ?? 0) + 1);
    for (const wake of waiters.splice(0)) wake();
  });
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const alive = () => child.exitCode === null && child.signalCode === null;
  return {
    process: child,
    exited,
    alive,
    async next(event) {
      for (;;) {
        const at = queue.findIndex((l) => l.event === event);
        if (at >= 0) return queue.splice(0, at + 1)[at] as Record<string, unknown>;
        if (!alive()) throw new Error(`${name} exited before '${event}'`);
        await Promise.race([new Promise<void>((resolve) => waiters.push(resolve)), exited]);
      }
    },
    count(event) {
      return counts.get(event) ?? 0;
    },
    send(line) {
      child.stdin?.write(`${line}\n`);
    },
    async kill9() {
      if (alive()) child.kill("SIGKILL");
      await exited;
    },
  };
}
