import { randomUUID } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { eq } from "drizzle-orm";
import { afterEach, beforeEach, expect, it } from "vitest";
import type { ChangeBatch } from "../../../agent-host/runs/change-batch/change-batch.ts";
import { finishRun } from "../../../agent-host/runs/claim/finish-run.ts";
import type { RunChange } from "../../../shared/contracts/run.ts";
import { changeBatches, changeBatchItems } from "../../../shared/db/schema.ts";
import { uidDirname } from "../../../shared/paths/uid-dirname.ts";
import { failExpiredLeases } from "../../../shared/runs/fail-expired-leases.ts";
import { claimParkedRun } from "../../support/claim-parked-run.ts";
import { pollUntil } from "../../support/poll-until.ts";
import { type RunApi, runApi } from "./run-api.ts";
import { type Project, type RunWorld, runWorld, UID } from "./run-harness.ts";
import { scriptedModels } from "./scripted-models.ts";

let world: RunWorld;
let api: RunApi;

beforeEach(async () => {
  world = await runWorld();
  api = await runApi(world);
});
afterEach(async () => {
  await world.cleanup();
});

function onHost(workdirPath: string, ...rest: string[]): string {
  return join(world.dataRoot.path, "users", uidDirname(UID), "workspace", workdirPath, ...rest);
}

/** Files written through the workspace layer before the run, owned by the sandbox user. */
async function seed(project: Project, files: Record<string, string>): Promise<void> {
  const workdir = await world.userWorkspaces.ensureManagedWorkdir(UID, project.workdirPath);
  try {
    for (const [path, content] of Object.entries(files)) {
      const dir = path.split("/").slice(0, -1).join("/");
      if (dir !== "") await workdir.ensureDir(dir);
      await workdir.writeFile(path, content);
    }
  } finally {
    workdir.close();
  }
}

async function submitThroughApi(threadId: string, input: string): Promise<string> {
  const response = await api.call("POST", `/v1/threads/${threadId}/runs`, UID, { input });
  expect(response.status).toBe(202);
  return ((await response.json()) as { run_id: string }).run_id;
}

async function changesThroughApi(runId: string, uid = UID): Promise<Response> {
  return api.call("GET", `/v1/runs/${runId}/changes`, uid);
}

function waitFor(condition: () => boolean, timeoutMs = 30_000): Promise<void> {
  return pollUntil(condition, { timeoutMs, intervalMs: 50 });
}

type ChangeList = {
  items: RunChange[];
  truncated: boolean;
  batches: {
    batch_id: string;
    run_id: string;
    tool: string;
    item_count: number;
    truncated: boolean;
  }[];
};

async function changesOf(runId: string, query = ""): Promise<ChangeList> {
  const response = await api.call("GET", `/v1/runs/${runId}/changes${query}`, UID);
  expect(response.status).toBe(200);
  return (await response.json()) as ChangeList;
}

it("a run's created, modified and deleted files are its changes; nothing outside its Workdir is", async () => {
  await world.worker();
  const project = await world.project();
  const neighbour = await world.project();
  await seed(project, {
    "keep.txt": "untouched\n",
    "modify.txt": "before\n",
    "delete.txt": "bye\n",
    "dir/gone.txt": "in a removed directory\n",
    "dir/sub/gone-too.txt": "deeper\n",
  });
  await seed(neighbour, { "outside.txt": "neighbour\n" });
  const neighbourDir = neighbour.workdirPath.split("/").at(-1);
  const thread = await world.thread(project);

  const runId = await submitThroughApi(
    thread,
    [
      "echo new > added.txt",
      "mkdir -p made/deep && printf 12345 > made/deep/n.bin",
      "echo more >> modify.txt",
      "rm delete.txt",
      "rm -r dir",
      "echo r > outputs/report.md",
      // The whole UserWorkspace is mounted: the run can write next to its Workdir, and
      // through a symlink it leaves in it; neither is a change of this Workdir.
      `echo leak >> ../${neighbourDir}/outside.txt`,
      `ln -s ../${neighbourDir} escape`,
      "echo via-link > escape/via-link.txt",
      "ln -s /etc/hostname host-link",
      // A FIFO is never opened (it would block a reader) nor reported.
      "mkfifo pipe",
      "echo scratch > /tmp/scratch.txt",
      "echo done",
    ].join(" && "),
  );
  const run = await world.waitForRun(runId);
  expect(run.status).toBe("succeeded");
  // The writes outside the Workdir really happened.
  expect(readFileSync(onHost(neighbour.workdirPath, "outside.txt"), "utf8")).toBe(
    "neighbour\nleak\n",
  );
  expect(readFileSync(onHost(neighbour.workdirPath, "via-link.txt"), "utf8")).toBe("via-link\n");

  const changes = await changesOf(runId);
  expect(changes.items).toEqual([
    { path: "added.txt", change: "added", size: 4 },
    { path: "delete.txt", change: "deleted", size: null },
    { path: "dir/gone.txt", change: "deleted", size: null },
    { path: "dir/sub/gone-too.txt", change: "deleted", size: null },
    { path: "made/deep/n.bin", change: "added", size: 5 },
    { path: "modify.txt", change: "modified", size: 12 },
    { path: "outputs/report.md", change: "added", size: 2 },
  ] satisfies RunChange[]);
  expect(changes.truncated).toBe(false);
  // The shell model ran one command: one batch, and `?batch=` gives the same facts.
  expect(changes.batches).toMatchObject([
    { run_id: runId, tool: "shell", item_count: 7, truncated: false },
  ]);
  const batchId = changes.batches[0]?.batch_id as string;
  expect((await changesOf(runId, `?batch=${batchId}`)).items).toEqual(changes.items);
  expect((await changesThroughApi(randomUUID())).status).toBe(404);
  const other = await api.call("GET", `/v1/runs/${runId}/changes?batch=${randomUUID()}`, UID);
  expect(other.status).toBe(404);

  // Another user's run is indistinguishable from none, changes included.
  expect((await changesThroughApi(runId, "intruder")).status).toBe(404);
  expect((await changesThroughApi(randomUUID())).status).toBe(404);
});

it("a run that changes nothing has an empty, complete list; a run that never executed has no batch", async () => {
  await world.worker();
  const project = await world.project();
  await seed(project, { "a.txt": "a\n" });
  const thread = await world.thread(project);
  const quiet = await submitThroughApi(thread, "cat a.txt");
  expect((await world.waitForRun(quiet)).status).toBe("succeeded");
  const quietChanges = await changesOf(quiet);
  expect(quietChanges).toMatchObject({ items: [], truncated: false });
  expect(quietChanges.batches).toMatchObject([{ item_count: 0, truncated: false }]);

  const missing = await world.project({ linkedPath: "code/not-there" });
  const failed = await submitThroughApi(await world.thread(missing), "echo never");
  expect((await world.waitForRun(failed)).error?.code).toBe("workdir_missing");
  expect(await changesOf(failed)).toEqual({ items: [], truncated: false, batches: [] });
});

it("a cancelled run's changes are recorded too", async () => {
  await world.worker();
  const project = await world.project();
  const thread = await world.thread(project);
  const runId = await submitThroughApi(thread, "echo partial > outputs/half.txt && sleep 300");
  const half = onHost(project.workdirPath, "outputs", "half.txt");
  await waitFor(() => existsSync(half));
  await world.requestCancel(runId);
  expect((await world.waitForRun(runId)).status).toBe("cancelled");
  expect(await changesOf(runId)).toMatchObject({
    items: [{ path: "outputs/half.txt", change: "added", size: 8 }],
    truncated: false,
  });
});

it("a run that removes its whole Workdir reports every file deleted", async () => {
  await world.worker();
  const project = await world.project();
  await seed(project, { "a.txt": "a\n", "d/b.txt": "b\n" });
  const thread = await world.thread(project);
  const runId = await submitThroughApi(thread, 'rm -rf "$PWD"; echo gone');
  expect((await world.waitForRun(runId)).status).toBe("succeeded");
  expect(existsSync(onHost(project.workdirPath))).toBe(false);
  expect(await changesOf(runId)).toMatchObject({
    items: [
      { path: "a.txt", change: "deleted", size: null },
      { path: "d/b.txt", change: "deleted", size: null },
    ],
    truncated: false,
  });
});

it("a scan past its bound records what it saw, exactly, and says truncated", async () => {
  // Root: bulk/, outputs/, top.txt (3 entries), then 2 left for bulk/'s 10 files.
  await world.worker({ limits: { changesMaxEntries: 5 } });
  const project = await world.project();
  const bulk = Object.fromEntries(
    Array.from({ length: 10 }, (_, i) => [`bulk/f${i}.txt`, `${i}\n`]),
  );
  await seed(project, { "top.txt": "top\n", ...bulk });
  const thread = await world.thread(project);
  const runId = await submitThroughApi(
    thread,
    "echo more >> top.txt && echo n > new.txt && rm bulk/f3.txt && echo y > bulk/new.txt",
  );
  expect((await world.waitForRun(runId)).status).toBe("succeeded");
  // Exact where both snapshots listed in full (the Workdir itself); nothing invented for
  // bulk/, which neither listed in full.
  expect(await changesOf(runId)).toMatchObject({
    items: [
      { path: "new.txt", change: "added", size: 2 },
      { path: "top.txt", change: "modified", size: 9 },
    ],
    truncated: true,
  });
});

it("the root run lists its execution tree's batches; a sub-agent's list is its own", async () => {
  const models = scriptedModels((request) => {
    if (request.depth === 1) {
      return [
        {
          toolCalls: [
            { name: "write_file", arguments: { path: "child-file.txt", content: "from child\n" } },
          ],
        },
        { text: "child done" },
      ];
    }
    return [
      { toolCalls: [{ name: "spawn_subagent", arguments: { task: "CHILD TASK" } }] },
      { toolCalls: [{ name: "bash", arguments: { command: "echo p > parent.txt" } }] },
      { text: "parent done" },
    ];
  });
  await world.worker({ model: models.factory });
  const thread = await world.thread(await world.project());
  const rootId = await submitThroughApi(thread, "PARENT");
  expect((await world.waitForRun(rootId)).status).toBe("succeeded");
  const [child] = await world.childRuns(rootId);
  if (child === undefined) throw new Error("no sub-agent run");
  expect(child.status).toBe("succeeded");

  const root = await changesOf(rootId);
  expect(root).toMatchObject({
    items: [
      { path: "child-file.txt", change: "added", size: 11 },
      { path: "parent.txt", change: "added", size: 2 },
    ],
    truncated: false,
  });
  // The child's write_file ran (under the lease) before the parent's next command.
  expect(root.batches.map((b) => [b.run_id, b.tool])).toEqual([
    [child.runId, "write_file"],
    [rootId, "bash"],
  ]);
  expect((await changesOf(child.runId)).items).toEqual([
    { path: "child-file.txt", change: "added", size: 11 },
  ]);
});

it("unrepaired placeholders are written by the fenced ending: a worker that lost its claim records none", async () => {
  const thread = await world.thread(await world.project());
  const runId = await world.commitRun(thread, "task");
  const claim = await claimParkedRun(world.db, { runId, nodeId: world.nodeId, leaseTtlMs: 60_000 });
  if (!claim.ok) throw new Error("claim failed");
  const now = new Date().toISOString();
  const unrepaired: ChangeBatch[] = [
    {
      batchId: randomUUID(),
      runId,
      rootRunId: runId,
      uid: UID,
      seq: 0,
      workdirPath: "w",
      tool: "bash",
      command: "late",
      startedAt: now,
      finishedAt: now,
      items: [{ path: "late.txt", change: "added", size: 1 }],
      truncated: false,
    },
  ];
  // The lease expired and the sweeper ended the run node_lost; the old worker finishes late.
  await failExpiredLeases(world.db, new Date(Date.now() + 3_600_000));
  expect(
    await finishRun(world.db, claim.fence, thread, 2, { status: "succeeded" }, unrepaired),
  ).toBe(false);
  expect(await world.db.select().from(changeBatches).where(eq(changeBatches.runId, runId))).toEqual(
    [],
  );
  expect(await changesOf(runId)).toEqual({ items: [], truncated: false, batches: [] });
});

it("the tables refuse a batch of another user's run, a deleted file with a size, an absolute path", async () => {
  const thread = await world.thread(await world.project());
  const runId = await world.commitRun(thread, "task");
  const batch = {
    batchId: randomUUID(),
    runId,
    rootRunId: runId,
    uid: UID,
    seq: 0,
    workdirPath: "w",
    tool: "bash" as const,
    command: "x",
    truncated: false,
    itemCount: 1,
    startedAt: new Date(),
    finishedAt: new Date(),
  };
  await expect(
    world.db.insert(changeBatches).values({ ...batch, batchId: randomUUID(), uid: "someone-else" }),
  ).rejects.toThrow();
  await world.db.insert(changeBatches).values(batch);
  type Item = typeof changeBatchItems.$inferInsert;
  const row: Item = { batchId: batch.batchId, path: "a.txt", change: "added", size: 1 };
  await world.db.insert(changeBatchItems).values(row);
  const refused = async (values: Item) => {
    await expect(world.db.insert(changeBatchItems).values(values)).rejects.toThrow();
  };
  await refused({ ...row, path: "c.txt", change: "deleted" });
  await refused({ ...row, path: "d.txt", size: null });
  await refused({ ...row, path: "/etc/passwd" });
  await refused({ ...row, path: "" });
  await refused({ ...row, batchId: randomUUID(), path: "e.txt" });
  // One row per path and batch.
  await refused({ ...row, size: 2 });
  // A placeholder awaiting repair is truncated and empty by construction.
  await expect(
    world.db
      .insert(changeBatches)
      .values({ ...batch, batchId: randomUUID(), pendingRepair: true, truncated: false }),
  ).rejects.toThrow();
});
