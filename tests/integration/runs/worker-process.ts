import type { ChildProcess } from "node:child_process";
import { awsConfig } from "../../support/aws.ts";
import { spawnJsonLineChild } from "../../support/json-line-child.ts";
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
  const child = spawnJsonLineChild(new URL("./worker-child.ts", import.meta.url), args, "worker");
  return {
    process: child.process,
    next: child.next,
    async stop() {
      if (child.alive()) child.send("stop");
      await child.exited;
    },
    kill9: child.kill9,
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
  sandbox: Pick<WorkerChildArgs, "keepWarmMs"> = {},
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
      ...sandbox,
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
