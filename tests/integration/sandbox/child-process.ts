import type { ChildProcess } from "node:child_process";
import { spawnJsonLineChild } from "../../support/json-line-child.ts";
import type { ChildArgs } from "./manager-child.ts";

export type Child = {
  process: ChildProcess;
  /** The next JSON line whose `event` is `event` (earlier lines are skipped). */
  next(event: string): Promise<Record<string, unknown>>;
  kill9(): Promise<void>;
};

/** Starts manager-child.ts as a separate agent-host-like process. */
export function spawnChild(args: ChildArgs): Child {
  const child = spawnJsonLineChild(new URL("./manager-child.ts", import.meta.url), args, "child");
  return { process: child.process, next: child.next, kill9: child.kill9 };
}
