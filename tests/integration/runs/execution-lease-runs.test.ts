import { existsSync, readFileSync } from "node:fs";
import { chown, mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { asc, eq, sql } from "drizzle-orm";
import { afterEach, beforeEach, expect, it } from "vitest";
import { executeRows } from "../../../shared/db/execute-rows.ts";
import { changeBatches } from "../../../shared/db/schema.ts";
import { uidDirname } from "../../../shared/paths/uid-dirname.ts";
import { pollUntil } from "../../support/poll-until.ts";
import { type Project, type RunWorld, runWorld, UID } from "./run-harness.ts";

// Whole runs through the worker (shell model, Docker sandbox): the Execution Lease around
// every command, observed from outside: the files on the host, the lease rows, the batches.

let world: RunWorld;

beforeEach(async () => {
  world = await runWorld();
  await world.worker({ limits: { concurrency: 4, leasePollIntervalMs: 100 } });
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
  let dir = workspace;
  for (const part of path.split("/")) {
    dir = join(dir, part);
    await chown(dir, 1000, 1000);
  }
  return world.project({ uid, linkedPath: path });
}

function until(condition: () => boolean | Promise<boolean>, what: string): Promise<void> {
  return pollUntil(condition, { what, intervalMs: 50 });
}

const leaseStates = async (runId: string) =>
  (
    await executeRows<{ state: string }>(
      world.db,
      sql`select state from execution_leases where run_id = ${runId}`,
    )
  ).map((r) => r.state);

async function batchOf(runId: string) {
  const [batch] = await world.db
    .select()
    .from(changeBatches)
    .where(eq(changeBatches.runId, runId))
    .orderBy(asc(changeBatches.seq));
  if (batch === undefined) throw new Error(`no batch for ${runId}`);
  return batch;
}

/** Appends A1..A3, holds until the host creates `release`, then appends A4..A6. */
const HOLDING = [
  "for i in 1 2 3; do echo A$i >> log.txt; sleep 0.1; done",
  "n=0; while [ ! -f release ] && [ $n -lt 600 ]; do sleep 0.1; n=$((n+1)); done",
  "for i in 4 5 6; do echo A$i >> log.txt; sleep 0.1; done",
].join("; ");
const APPENDING = "for i in 1 2 3 4 5 6; do echo B$i >> log.txt; sleep 0.1; done";

it("two threads on one linked project: the second command waits, the file shows one block then the other", async () => {
  const project = await linked(UID, "code/shared");
  const first = await world.submit(await world.thread(project), HOLDING);
  await until(
    () =>
      existsSync(onHost(UID, "code/shared", "log.txt")) &&
      readFileSync(onHost(UID, "code/shared", "log.txt"), "utf8").includes("A3"),
    "the first run's first block",
  );
  const second = await world.submit(await world.thread(project), APPENDING);
  await until(async () => (await leaseStates(second)).includes("waiting"), "the second to queue");
  // While it waits, nothing of the second run has reached the file.
  expect(readFileSync(onHost(UID, "code/shared", "log.txt"), "utf8")).not.toContain("B");
  await writeFile(onHost(UID, "code/shared", "release"), "");
  expect((await world.waitForRun(first)).status).toBe("succeeded");
  expect((await world.waitForRun(second)).status).toBe("succeeded");
  const lines = readFileSync(onHost(UID, "code/shared", "log.txt"), "utf8")
    .trim()
    .split("\n");
  expect(lines).toEqual(["A1", "A2", "A3", "A4", "A5", "A6", "B1", "B2", "B3", "B4", "B5", "B6"]);
  const [a, b] = [await batchOf(first), await batchOf(second)];
  expect(b.startedAt.getTime()).toBeGreaterThanOrEqual(a.finishedAt.getTime());
});

it("two projects of one user, and two users on the same path, never wait on each other", async () => {
  const holderProject = await linked(UID, "code/one");
  const holder = await world.submit(await world.thread(holderProject), HOLDING);
  await until(async () => (await leaseStates(holder)).includes("held"), "the holder's lease");
  // Same uid, a sibling root; another uid, the very same path.
  const sibling = await world.submit(await world.thread(await linked(UID, "code/two")), APPENDING);
  const other = await world.submit(await world.thread(await linked("dora", "code/one")), APPENDING);
  expect((await world.waitForRun(sibling)).status).toBe("succeeded");
  expect((await world.waitForRun(other)).status).toBe("succeeded");
  // Both finished while the holder still held its lease.
  expect((await world.run(holder)).status).toBe("running");
  expect(await leaseStates(holder)).toEqual(["held"]);
  await writeFile(onHost(UID, "code/one", "release"), "");
  expect((await world.waitForRun(holder)).status).toBe("succeeded");
  const held = await batchOf(holder);
  for (const runId of [sibling, other]) {
    const batch = await batchOf(runId);
    // The recorded intervals overlap: each ran inside the holder's command.
    expect(batch.startedAt.getTime()).toBeGreaterThan(held.startedAt.getTime());
    expect(batch.finishedAt.getTime()).toBeLessThan(held.finishedAt.getTime());
  }
  expect(readFileSync(onHost("dora", "code/one", "log.txt"), "utf8")).toContain("B6");
});
