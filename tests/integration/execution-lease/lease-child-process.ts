import type { ChildProcess } from "node:child_process";
import { spawnJsonLineChild } from "../../support/json-line-child.ts";
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
  const child = spawnJsonLineChild(
    new URL("./lease-child.ts", import.meta.url),
    args,
    "lease child",
  );
  return {
    process: child.process,
    exited: child.exited,
    next: child.next,
    release: () => child.send("release"),
    kill9: child.kill9,
  };
}
