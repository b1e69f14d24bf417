import { type ChildProcess, spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { awsConfig } from "../../support/aws.ts";
import type { WorkerChildArgs } from "./worker-child.ts";

export type WorkerProcess = {
  process: ChildProcess;
  /** The next JSON line whose `event` is `event` (earlier lines are skipped). */
  next(event: string): Promise<Record<string, unknown>>;
  /** Asks for a clean stop and waits for the process to exit. */
  stop(): Promise<void>;
  kill9(): Promise<void>;
};

/** Starts worker-child.ts as a separate agent-host process. */
export function spawnWorker(args: WorkerChildArgs): WorkerProcess {
  const child = spawn(
    process.execPath,
    [new URL("./worker-child.ts", import.meta.url).pathname, JSON.stringify(args)],
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
  const alive = () => child.exitCode === null && child.signalCode === null;
  return {
    process: child,
    async next(event) {
      for (;;) {
        const at = queue.findIndex((l) => l.event === event);
        if (at >= 0) return queue.splice(0, at + 1)[at] as Record<string, unknown>;
        if (!alive()) throw new Error(`worker exited before '${event}'`);
        await Promise.race([new Promise<void>((resolve) => waiters.push(resolve)), exited]);
      }
    },
    async stop() {
      if (alive()) child.stdin?.write("stop\n");
      await exited;
    },
    async kill9() {
      if (alive()) child.kill("SIGKILL");
      await exited;
    },
  };
}

/** What a test world holds that its worker processes are started on. */
export type WorkerWorld = {
  database: { url: string };
  dataRoot: { path: string };
  image: string;
  queueUrl: string;
};

/**
 * One agent-host process per node id, all on the world's database, data root, image and
 * run queue (fauxqs) with `limits`; resolves when every one of them is ready.
 */
export async function startWorkerProcesses(
  world: WorkerWorld,
  nodeIds: readonly string[],
  limits: WorkerChildArgs["limits"],
): Promise<WorkerProcess[]> {
  const workers = nodeIds.map((nodeId) =>
    spawnWorker({
      dbUrl: world.database.url,
      dataRoot: world.dataRoot.path,
      nodeId,
      image: world.image,
      queueUrl: world.queueUrl,
      awsEndpoint: awsConfig().endpoint,
      limits,
    }),
  );
  try {
    await Promise.all(workers.map((w) => w.next("ready")));
  } catch (error) {
    await Promise.all(workers.map((w) => w.kill9()));
    throw error;
  }
  return workers;
}
