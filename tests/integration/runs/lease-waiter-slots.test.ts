import { existsSync } from "node:fs";
import { chown, mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { eq, sql } from "drizzle-orm";
import { afterEach, beforeEach, expect, it } from "vitest";
import { executeRows } from "../../../shared/db/execute-rows.ts";
import { type AgentRun, agentRuns, changeBatches, userLimits } from "../../../shared/db/schema.ts";
import { uidDirname } from "../../../shared/paths/uid-dirname.ts";
import { pollUntil } from "../../support/poll-until.ts";
import { type Project, type RunWorld, runWorld } from "./run-harness.ts";

// Issue 37 item 8 (decision 0141): runs waiting for another run's Execution Lease on the
// same Workdir lend their worker slot, so one user's queue behind one Workdir does not
// keep another user's run from the node. Whole runs through the worker, real sandboxes.

let world: RunWorld;
const SLOTS = 3;

beforeEach(async () => {
  world = await runWorld();
  await world.worker({
    limits: { concurrency: SLOTS, waitingPollMs: 200, leasePollIntervalMs: 100 },
    // The gated commands wait for the test, not for the default time limit.
    extra: { agentTools: { bash: { defaultTimeoutMs: 150_000 } } },
  });
});
afterEach(async () => {
  await world.cleanup();
});

function onHost(uid: string, ...path: string[]): string {
  return join(world.dataRoot.path, "users", uidDirname(uid), "workspace", ...path);
}

/** A linked project on an existing directory the sandbox user owns. */
async function linked(uid: string, path: string): Promise<Project> {
  const workspace = onHost(uid);
  await mkdir(join(workspace, path), { recursive: true });
  await chown(workspace, 1000, 1000);
  await chown(join(workspace, path), 1000, 1000);
  return world.project({ uid, linkedPath: path });
}

const GATED = "until [ -e gate ]; do sleep 0.05; done; echo $$ >> done.txt";

const leaseStates = async (uid: string) =>
  (
    await executeRows<{ state: string }>(
      world.db,
      sql`select state from execution_leases where uid = ${uid} order by state`,
    )
  ).map((r) => r.state);

const statuses = async (ids: string[]) =>
  Promise.all(ids.map(async (id) => (await world.run(id)).status));

function until(condition: () => boolean | Promise<boolean>, what: string): Promise<void> {
  return pollUntil(condition, { what, timeoutMs: 90_000, intervalMs: 50 });
}

/** Most commands (change batches) of the list whose intervals overlap at one instant. */
async function maxCommandOverlap(runIds: string[]): Promise<number> {
  const batches = await Promise.all(
    runIds.map((id) => world.db.select().from(changeBatches).where(eq(changeBatches.runId, id))),
  );
  const edges = batches.flat().flatMap((b) => [
    { at: b.startedAt.getTime(), delta: 1 },
    { at: b.finishedAt.getTime(), delta: -1 },
  ]);
  edges.sort((x, y) => x.at - y.at || x.delta - y.delta);
  let now = 0;
  let most = 0;
  for (const edge of edges) {
    now += edge.delta;
    most = Math.max(most, now);
  }
  return most;
}

it("another user's run completes while one user's runs queue on one Workdir's Execution Lease (issue 37 item 8)", async () => {
  // A may run more than the node has slots: only the lease keeps A's commands in line.
  await world.db.insert(userLimits).values({ uid: "tenant-a", maxConcurrentRuns: 10 });
  const shared = await linked("tenant-a", "code/shared");
  const projectB = await linked("tenant-b", "code/b");

  // B holds a slot with a gated run first, so B is not a newcomer: the node's idle-user
  // slot (IDLE_UID_SLOTS) is no way in for B's next run.
  const bHolder = await world.submit(await world.thread(projectB), GATED);
  await until(async () => (await leaseStates("tenant-b")).includes("held"), "B's gated command");

  // Five runs of A on one Workdir (five threads, five sandboxes): one holds the lease with
  // a gated command, four wait for it, each in a run the worker claimed.
  const aRuns: string[] = [];
  for (let i = 0; i < 5; i++) aRuns.push(await world.submit(await world.thread(shared), GATED));
  await until(async () => {
    const states = await leaseStates("tenant-a");
    return states.length === 5 && states.filter((s) => s === "held").length === 1;
  }, "A's holder and four waiters");
  expect(await statuses(aRuns)).toEqual(aRuns.map(() => "running"));

  // B's second run (another Workdir) starts and ends while A's four still wait and both gates stay closed.
  // Before, A's holder and one waiter with B's holder filled the three slots, and this
  // run waited for a gate to open.
  const bRun = await world.submit(await world.thread(await linked("tenant-b", "code/c")), "echo b");
  const b: AgentRun = await world.waitForRun(bRun, undefined, 90_000);
  expect(b.status).toBe("succeeded");
  expect(await leaseStates("tenant-a")).toEqual([
    "held",
    "waiting",
    "waiting",
    "waiting",
    "waiting",
  ]);
  expect(await statuses([...aRuns, bHolder])).toEqual([...aRuns, bHolder].map(() => "running"));
  expect(existsSync(onHost("tenant-a", "code/shared", "done.txt"))).toBe(false);

  // Nothing else changes: every run ends once, A's commands one at a time, and never more
  // commands at once on the node than it has slots.
  await writeFile(onHost("tenant-a", "code/shared", "gate"), "");
  await writeFile(onHost("tenant-b", "code/b", "gate"), "");
  const all = await Promise.all(
    [...aRuns, bHolder].map((id) => world.waitForRun(id, undefined, 120_000)),
  );
  expect(all.map((r) => [r.status, r.attempt])).toEqual(all.map(() => ["succeeded", 1]));
  expect(await maxCommandOverlap(aRuns)).toBe(1);
  expect(await maxCommandOverlap([...aRuns, bHolder, bRun])).toBeLessThanOrEqual(SLOTS);
  const left = await world.db.select().from(agentRuns).where(eq(agentRuns.status, "running"));
  expect(left).toEqual([]);
  expect(await leaseStates("tenant-a")).toEqual([]);
}, 300_000);
