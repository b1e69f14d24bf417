// A run's end starts no fair fill when the last fill claimed the only waiting run
// (decision 0075). The poll is pushed out of reach here (10 minutes), so every claim below
// comes from a wake: a park, or a run's end that must not be skipped.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, expect, it } from "vitest";
import { userLimits } from "../../../shared/db/schema.ts";
import { uidDirname } from "../../../shared/paths/uid-dirname.ts";
import { RUN_SLOTS_CHANNEL } from "../../../shared/runs/run-channels.ts";
import { pollUntil } from "../../support/poll-until.ts";
import { type Project, type RunWorld, runWorld } from "./run-harness.ts";

const NO_POLL = { waitingPollMs: 600_000 };
const GATE = "fill-skip-gate";
const GATED = `until [ -e ${GATE} ]; do sleep 0.05; done; echo a`;

let world: RunWorld;

beforeEach(async () => {
  world = await runWorld();
});
afterEach(async () => {
  await world.cleanup();
});

function openGate(project: Project): void {
  const workdir = join(
    world.dataRoot.path,
    "users",
    uidDirname(project.uid),
    "workspace",
    project.workdirPath,
  );
  writeFileSync(join(workdir, GATE), "");
}

it("a run held back by its uid's limit is claimed when the run before it ends", async () => {
  await world.db.insert(userLimits).values({ uid: "tenant-a", maxConcurrentRuns: 1 });
  await world.worker({ limits: NO_POLL });
  const project = await world.project({ uid: "tenant-a" });
  // The first run is claimed as the only waiting run; the second starts waiting after.
  const first = await world.submit(await world.thread(project), GATED);
  await world.waitForRun(first, (run) => run.status === "running");
  const second = await world.submit(await world.thread(project), "echo b");
  await world.waitForRun(second, (run) => run.waitingSince !== null);
  expect((await world.run(second)).status).toBe("pending");

  openGate(project);
  expect((await world.waitForRun(first, undefined, 60_000)).status).toBe("succeeded");
  // Only the first run's end can wake the slots now.
  const b = await world.waitForRun(second, undefined, 60_000);
  expect(b.status).toBe("succeeded");
  expect(b.attempt).toBe(1);
}, 180_000);

it("the turns of a conversation are each claimed when nothing else waits", async () => {
  await world.worker({ limits: NO_POLL });
  const project = await world.project({ uid: "tenant-b" });
  const thread = await world.thread(project);
  for (const word of ["one", "two", "three"]) {
    const id = await world.submit(thread, `echo ${word}`);
    expect((await world.waitForRun(id, undefined, 60_000)).status).toBe("succeeded");
  }
}, 180_000);

it("a run's end tells the other nodes of its freed slot exactly once, at its commit", async () => {
  // One listening connection: notifications arrive in commit order, whatever the channel,
  // so a marker sent after the run is visible as ended bounds what the ending sent.
  const heard: string[] = [];
  const marker = `marker-${Date.now()}`;
  const stopSlots = await world.database.sql.listen(RUN_SLOTS_CHANNEL, (p) => heard.push(p));
  const stopMarker = await world.database.sql.listen(marker, () => heard.push(marker));
  try {
    await world.worker({ limits: NO_POLL });
    const project = await world.project({ uid: "tenant-c" });
    const id = await world.submit(await world.thread(project), "echo c");
    expect((await world.waitForRun(id, undefined, 60_000)).status).toBe("succeeded");
    await world.database.sql`select pg_notify(${marker}, '')`;
    await pollUntil(() => heard.includes(marker), { what: "the marker's NOTIFY", intervalMs: 20 });
    // The park's NOTIFY, then the ending's (committed with the status the run shows):
    // none sent later by a separate statement, none lost.
    expect(heard).toEqual([world.nodeId, world.nodeId, marker]);
  } finally {
    await stopSlots.unlisten();
    await stopMarker.unlisten();
  }
}, 180_000);
