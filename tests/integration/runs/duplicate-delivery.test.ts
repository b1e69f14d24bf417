import { readFileSync } from "node:fs";
import { join } from "node:path";
import { GetQueueAttributesCommand } from "@aws-sdk/client-sqs";
import { afterEach, beforeEach, expect, it } from "vitest";
import { LABEL } from "../../../agent-host/sandbox/instance/container-labels.ts";
import { uidDirname } from "../../../shared/paths/uid-dirname.ts";
import { removeContainersLabelled } from "../../support/docker.ts";
import { pollFor } from "../../support/poll-until.ts";
import { registerNode } from "../sandbox/manager-fixture.ts";
import { uniqueNodeId } from "../sandbox/sandbox-fixture.ts";
import { expectGapFree, type RunWorld, runWorld, TEST_LIMITS, UID } from "./run-harness.ts";
import { startWorkerProcesses, type WorkerProcess } from "./worker-process.ts";

let world: RunWorld;
let otherNode: string;
const workers: WorkerProcess[] = [];

beforeEach(async () => {
  world = await runWorld();
  otherNode = uniqueNodeId();
  await registerNode(world.db, otherNode);
});
afterEach(async () => {
  await Promise.all(workers.splice(0).map((w) => w.kill9()));
  await removeContainersLabelled(world.docker, LABEL.nodeId, otherNode);
  await world.cleanup();
});

const RUNS = 4;
const COPIES = 3;

it("runs delivered several times to two agent-host processes execute exactly once", async () => {
  workers.push(...(await startWorkerProcesses(world, [world.nodeId, otherNode], TEST_LIMITS)));

  const project = await world.project();
  const runIds: string[] = [];
  for (let i = 0; i < RUNS; i++) {
    const thread = await world.thread(project);
    // Appends, so a second execution would show as a second line.
    runIds.push(await world.commitRun(thread, `echo ran >> outputs/run-${i}.txt; sleep 1`));
  }
  // Every run's message several times over, interleaved: both processes race for each.
  for (let copy = 0; copy < COPIES; copy++) {
    for (const runId of runIds) await world.dispatch(runId);
  }

  const runs = await Promise.all(runIds.map((id) => world.waitForRun(id)));
  const workdir = join(
    world.dataRoot.path,
    "users",
    uidDirname(UID),
    "workspace",
    project.workdirPath,
  );
  for (const [i, run] of runs.entries()) {
    expect(run.status).toBe("succeeded");
    // One claim: attempt 1, whichever node won it.
    expect(run.attempt).toBe(1);
    expect([world.nodeId, otherNode]).toContain(run.ownerNode);
    expect(readFileSync(join(workdir, "outputs", `run-${i}.txt`), "utf8")).toBe("ran\n");
    expectGapFree(await world.events(run.runId));
  }

  // Every copy was consumed and deleted: nothing is left to deliver again.
  await waitForEmptyQueue();
  await Promise.all(workers.map((w) => w.stop()));
  await world.waitForNoContainers();
});

async function waitForEmptyQueue(): Promise<void> {
  await pollFor(
    async () => {
      const out = await world.sqs.send(
        new GetQueueAttributesCommand({
          QueueUrl: world.queueUrl,
          AttributeNames: ["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
        }),
      );
      return (
        Number(out.Attributes?.ApproximateNumberOfMessages ?? 0) +
        Number(out.Attributes?.ApproximateNumberOfMessagesNotVisible ?? 0)
      );
    },
    (left) => left === 0,
    {
      what: "an empty queue",
      timeoutMs: 30_000,
      intervalMs: 100,
      detail: (left) => `${left} messages left on the queue`,
    },
  );
}
