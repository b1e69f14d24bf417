import { existsSync } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { eq } from "drizzle-orm";
import { afterEach, beforeEach, expect, it } from "vitest";
import { putLimitsOverride } from "../../../functions/limits/user-limits-store.ts";
import { changeBatches } from "../../../shared/db/schema.ts";
import { uidDirname } from "../../../shared/paths/uid-dirname.ts";
import { containersOfNode } from "../sandbox/sandbox-fixture.ts";
import { startQuotaWorker } from "./quota-worker.ts";
import { expectGapFree, type RunWorld, runWorld } from "./run-harness.ts";
import { toolOutputs } from "./scripted-models.ts";

// The accounting mode's stop for sandbox commands (docs/decisions/0050): with no
// filesystem quota a command is stopped only once a watch sees it over (0143), and once
// the UserWorkspace is over
// its quota the run's next command is refused (the model is told why) and a new run of
// that uid fails `quota_exceeded` before anything starts. Real Postgres, real sandboxes,
// real files; the gate is the one agent-host.ts wires, over a real accounting.

let world: RunWorld;

beforeEach(async () => {
  world = await runWorld();
});
afterEach(async () => {
  await world.cleanup();
});

const QUOTA = 64 * 1024;

function workdirOnHost(uid: string, workdirPath: string): string {
  return join(world.dataRoot.path, "users", uidDirname(uid), "workspace", workdirPath);
}

/** A worker whose runs go over the quota with their first command and touch a marker next. */
async function startWorker() {
  // 200 KiB: past the 64 KiB quota, in about a millisecond: it usually ends before the
  // quota watch looks again (decision 0143, tests/integration/runs/quota-overrun.test.ts).
  return startQuotaWorker(
    world,
    "dd if=/dev/zero of=big bs=1024 count=200 2>/dev/null; echo wrote",
  );
}

async function batchesOf(runId: string) {
  return world.db.select().from(changeBatches).where(eq(changeBatches.runId, runId));
}

it("once a command takes the workspace over its quota, the next command is refused and does not run; another uid's run is unaffected", async () => {
  const models = await startWorker();
  await putLimitsOverride(world.db, "quota-a", { workspace_bytes: QUOTA });
  const project = await world.project({ uid: "quota-a" });
  const runId = await world.submit(await world.thread(project), "fill it");
  const run = await world.waitForRun(runId);
  expect(run.status).toBe("succeeded");

  const workdir = workdirOnHost("quota-a", project.workdirPath);
  expect(existsSync(join(workdir, "big"))).toBe(true);
  // The refused command never ran: no marker, and only the first command has a batch.
  expect(existsSync(join(workdir, "marker"))).toBe(false);
  expect((await batchesOf(runId)).map((b) => b.command)).toEqual([
    expect.stringContaining("dd if=/dev/zero"),
  ]);
  const events = await world.events(runId);
  expectGapFree(events);
  const outputs = toolOutputs(events);
  // Ended, or stopped by the watch: either way the workspace is over its quota now.
  expect(outputs[0]).toMatch(/^wrote$|This command was stopped/m);
  expect(outputs[1]).toContain("quota_exceeded");
  expect(outputs[1]).toContain("ask an administrator to raise your limits");
  expect(outputs[1]).not.toContain("touched");
  // The model saw the refusal as the tool's result.
  const secondTurn = models.clients[0]?.client.requests[2];
  expect(secondTurn?.messages.at(-1)?.content).toContain("quota_exceeded");

  // Another uid with the default quota: both commands run.
  const other = await world.project({ uid: "quota-b" });
  const otherRun = await world.submit(await world.thread(other), "fill it");
  expect((await world.waitForRun(otherRun)).status).toBe("succeeded");
  expect(existsSync(join(workdirOnHost("quota-b", other.workdirPath), "marker"))).toBe(true);
  expect(await batchesOf(otherRun)).toHaveLength(2);
});

it("a run of a uid already over its quota fails quota_exceeded before anything starts; raising the limit lets the next run through", async () => {
  await startWorker();
  await putLimitsOverride(world.db, "quota-c", { workspace_bytes: QUOTA });
  const project = await world.project({ uid: "quota-c" });
  const thread = await world.thread(project);
  // Bytes already in the workspace past the quota (what an earlier command left).
  const workdir = workdirOnHost("quota-c", project.workdirPath);
  const workspace = join(world.dataRoot.path, "users", uidDirname("quota-c"), "workspace");
  await mkdir(workspace, { recursive: true });
  await writeFile(join(workspace, "old.bin"), Buffer.alloc(QUOTA + 1));

  const refused = await world.submit(thread, "anything");
  const run = await world.waitForRun(refused);
  expect(run).toMatchObject({ status: "failed", error: { code: "quota_exceeded" } });
  expect(run.error?.message).toContain("delete files you no longer need");
  expect(run.error?.message).toContain("ask an administrator to raise your limits");
  // Nothing happened: no event but the ending, no command, no batch, no Workdir, no sandbox.
  expect((await world.events(refused)).map((e) => e.type)).toEqual(["run.completed"]);
  expect(await batchesOf(refused)).toEqual([]);
  expect(existsSync(workdir)).toBe(false);
  expect(await containersOfNode(world.docker, world.nodeId)).toHaveLength(0);

  await putLimitsOverride(world.db, "quota-c", { workspace_bytes: 10 * QUOTA });
  const through = await world.submit(thread, "anything");
  expect((await world.waitForRun(through)).status).toBe("succeeded");
  expect(existsSync(join(workdir, "big"))).toBe(true);
  // 64 KiB + 200 KiB fits the raised 640 KiB: the second command ran too.
  expect(existsSync(join(workdir, "marker"))).toBe(true);
});
