import { mkdirSync, statSync, writeFileSync } from "node:fs";
import { chown, mkdir } from "node:fs/promises";
import { join } from "node:path";
import { eq } from "drizzle-orm";
import { afterEach, beforeEach, expect, it } from "vitest";
import { overrunBoundBytes } from "../../../agent-host/quota/command-quota-watch.ts";
import { measureWorkspaceUsage } from "../../../agent-host/quota/workspace-usage.ts";
import { openFanotifyFeed } from "../../../agent-host/workspace/fanotify-feed.ts";
import { putLimitsOverride } from "../../../functions/limits/user-limits-store.ts";
import { changeBatches } from "../../../shared/db/schema.ts";
import { uidDirname } from "../../../shared/paths/uid-dirname.ts";
import { startQuotaWorker } from "./quota-worker.ts";
import { type Project, type RunWorld, runWorld } from "./run-harness.ts";
import { toolOutputs } from "./scripted-models.ts";

// Issue 37 item 2, second round (decision 0163): the quota watch's looks are incremental
// peeks of the command's Workdir (the fanotify feed names what changed, decision 0156), so
// the overrun bound holds on a large workspace too. Before, each look walked the whole
// UserWorkspace: with 50,000 files a walk takes long enough for a 1 GiB write to finish
// between two looks. Real sandbox, real ext4 data root, the worker's own scanner.

let world: RunWorld;

// The process tier, the default where both tiers are ready (decision 0106): a stop there
// kills the process group at once. The container tier's stop goes through the Docker API,
// whose latency under load adds to the overrun (0143's test covers that tier).
beforeEach(async () => {
  world = await runWorld({}, "process");
});
afterEach(async () => {
  await world.cleanup();
});

const QUOTA = 10 * 1024 * 1024;
const PRESENT_FILES = 50_000;
const FLOOD = "dd if=/dev/zero of=big bs=1M count=1024 2>/dev/null; echo wrote";

function onHost(uid: string, ...path: string[]): string {
  return join(world.dataRoot.path, "users", uidDirname(uid), "workspace", ...path);
}

/** A linked Workdir the sandbox user owns, already holding `files` small files (100 a dir). */
async function largeWorkdir(uid: string, files: number): Promise<Project> {
  const workdir = onHost(uid, "big-project");
  await mkdir(workdir, { recursive: true });
  await chown(onHost(uid), 1000, 1000);
  await chown(workdir, 1000, 1000);
  for (let d = 0; d * 100 < files; d++) {
    const dir = join(workdir, `d${d}`);
    mkdirSync(dir);
    for (let f = 0; f < Math.min(100, files - d * 100); f++) writeFileSync(join(dir, `f${f}`), "x");
  }
  return world.project({ uid, linkedPath: "big-project" });
}

it("a command writing 1 GiB into a Workdir of 50,000 files against a 10 MiB quota is stopped within the overrun bound; another uid's run is unaffected", async () => {
  // The bound this test checks is the incremental one: the data root must take the mark.
  const probe = openFanotifyFeed(world.dataRoot.path);
  if (!probe.ok) throw new Error(`no fanotify mark on the test data root: ${probe.reason}`);
  probe.feed.close();
  await startQuotaWorker(world, FLOOD);
  await putLimitsOverride(world.db, "large-a", {
    workspace_bytes: QUOTA,
    workspace_inodes: 1_000_000,
  });
  const project = await largeWorkdir("large-a", PRESENT_FILES);
  const other = await largeWorkdir("large-b", PRESENT_FILES);
  const before = await measureWorkspaceUsage(onHost("large-a"), AbortSignal.timeout(60_000));
  expect(before.inodes).toBeGreaterThan(PRESENT_FILES);

  const runId = await world.submit(await world.thread(project), "flood it");
  const otherRun = await world.submit(await world.thread(other), "flood it too");
  const run = await world.waitForRun(runId, undefined, 180_000);
  expect(run.status).toBe("succeeded");

  const used = await measureWorkspaceUsage(onHost("large-a"), AbortSignal.timeout(60_000));
  const overrun = used.bytes - QUOTA;
  const bound = overrunBoundBytes({ workspace_bytes: QUOTA, workspace_inodes: 1_000_000 });
  console.info(
    `issue 37 item 2 (${PRESENT_FILES} files present): overrun ${(overrun / 2 ** 20).toFixed(1)} MiB past a 10 MiB quota (bound ${bound / 2 ** 20} MiB)`,
  );
  expect(used.bytes).toBeGreaterThan(QUOTA);
  expect(overrun).toBeLessThanOrEqual(bound);

  const outputs = toolOutputs(await world.events(runId));
  expect(outputs[0]).toContain("This command was stopped");
  expect(outputs[0]).not.toMatch(/^wrote$/m);
  // The next command is refused and never ran: no marker file.
  expect(outputs[1]).toContain("quota_exceeded");
  expect(outputs[1]).not.toContain("touched");
  expect(() => statSync(onHost("large-a", "big-project", "marker"))).toThrow();
  // The stopped command's batch records exactly what it wrote (the peeks left it exact).
  const batches = await world.db.select().from(changeBatches).where(eq(changeBatches.runId, runId));
  expect(batches).toHaveLength(1);
  expect(batches[0]?.itemCount).toBe(1);

  // The other uid, default quota, same moment, same size of Workdir: its gigabyte is within
  // its quota and its next command runs.
  const b = await world.waitForRun(otherRun, undefined, 180_000);
  expect(b.status).toBe("succeeded");
  const otherOutputs = toolOutputs(await world.events(otherRun));
  expect(otherOutputs[0]).toContain("wrote");
  expect(otherOutputs[1]).toContain("touched");
  expect(statSync(onHost("large-b", "big-project", "big")).size).toBe(2 ** 30);
}, 400_000);
