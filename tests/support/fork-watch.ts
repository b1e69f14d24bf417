import childProcess from "node:child_process";
import { subscribe, unsubscribe } from "node:diagnostics_channel";
import { syncBuiltinESMExports } from "node:module";

/*
 * Counts the processes this test process forks through node:child_process while it
 * watches (issue 41: a fork of agent-host blocks its event loop in proportion to its
 * memory). Every asynchronous spawn (spawn, execFile, exec, fork) goes through
 * ChildProcess#spawn, which publishes the file and arguments on Node's
 * `child_process.spawn` tracing channel; the synchronous ones do not, so their exports are
 * wrapped (and re-synced into every ESM import of the module) for the duration. posix_spawn through koffi (host-spawner.ts) is
 * not a fork of the process and is not counted.
 */

export type ForkWatch = {
  /** `file arg…` of every child started since the watch began. */
  readonly forks: string[];
  stop(): void;
};

const SPAWN_START = "tracing:child_process.spawn:start";
const SYNC_EXPORTS = ["spawnSync", "execFileSync", "execSync"] as const;

export function watchForks(): ForkWatch {
  const forks: string[] = [];
  const onStart = (message: unknown) => {
    const args = (message as { options?: { args?: string[] } }).options?.args;
    forks.push((args ?? ["(unknown)"]).join(" "));
  };
  subscribe(SPAWN_START, onStart);
  const cp = childProcess as unknown as Record<string, (...args: unknown[]) => unknown>;
  const originals = SYNC_EXPORTS.map((name) => [name, cp[name]] as const);
  for (const [name, original] of originals) {
    cp[name] = (...args: unknown[]) => {
      forks.push(`${name} ${String(args[0])}`);
      return original?.(...args);
    };
  }
  syncBuiltinESMExports();
  return {
    forks,
    stop() {
      unsubscribe(SPAWN_START, onStart);
      for (const [name, original] of originals) if (original) cp[name] = original;
      syncBuiltinESMExports();
    },
  };
}
