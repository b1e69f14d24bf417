import { chownSync, existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, expect, it } from "vitest";
import { materializeWorkdir } from "../sandbox/sandbox-fixture.ts";
import { type RunWorld, runWorld, UID } from "./run-harness.ts";
import { scriptedModels, toolOutputs } from "./scripted-models.ts";

// `agent.file_view: "workdir"` end to end: the run's sandbox, its host-side file tools and
// its system prompt all give the agent a read-only workspace with only the Workdir
// writable (docs/architecture.md §5), and a run without the option still writes everywhere.

let world: RunWorld;

beforeEach(async () => {
  world = await runWorld();
});
afterEach(async () => {
  await world.cleanup();
});

it("a workdir-view run reads its neighbour, cannot change it by bash or write_file, and writes its own Workdir", async () => {
  const project = await world.project();
  const neighbour = await world.project();
  const workspace = await materializeWorkdir(world.dataRoot.path, UID, project.workdirPath);
  await materializeWorkdir(world.dataRoot.path, UID, neighbour.workdirPath);
  const neighbourFile = join(workspace, neighbour.workdirPath, "data.txt");
  writeFileSync(neighbourFile, "neighbour data\n");
  chownSync(neighbourFile, 1000, 1000);
  const rel = `../${neighbour.workdirPath.split("/").at(-1)}`;

  const models = scriptedModels(() => [
    { toolCalls: [{ name: "bash", arguments: { command: `cat ${rel}/data.txt` } }] },
    {
      toolCalls: [
        {
          name: "bash",
          arguments: { command: `echo leak >> ${rel}/data.txt; echo x > ${rel}/new.txt` },
        },
      ],
    },
    {
      toolCalls: [{ name: "write_file", arguments: { path: `${rel}/planted.txt`, content: "x" } }],
    },
    { toolCalls: [{ name: "read_file", arguments: { path: `${rel}/data.txt` } }] },
    { toolCalls: [{ name: "bash", arguments: { command: "echo mine > outputs/bash.txt" } }] },
    { toolCalls: [{ name: "write_file", arguments: { path: "tool.txt", content: "tool" } }] },
    { text: "done" },
  ]);
  await world.worker({ model: models.factory });
  const thread = await world.thread(project);
  const runId = await world.submit(thread, "try the view", { file_view: "workdir" });

  const run = await world.waitForRun(runId);
  expect(run.status).toBe("succeeded");
  const outputs = toolOutputs(await world.events(runId));
  expect(outputs[0]).toContain("neighbour data");
  expect(outputs[1]).toMatch(/Read-only file system/);
  expect(outputs[2]).toMatch(/forbidden.*outside your Workdir/s);
  expect(outputs[3]).toContain("neighbour data");

  // Nothing changed next door; the Workdir got both files.
  expect(readFileSync(neighbourFile, "utf8")).toBe("neighbour data\n");
  expect(readdirSync(join(workspace, neighbour.workdirPath))).toEqual(["data.txt"]);
  const workdir = join(workspace, project.workdirPath);
  expect(readFileSync(join(workdir, "outputs/bash.txt"), "utf8")).toBe("mine\n");
  expect(readFileSync(join(workdir, "tool.txt"), "utf8")).toBe("tool");

  // The model was told what it sees.
  const system = models.clients[0]?.client.requests[0]?.messages[0];
  expect(system?.role).toBe("system");
  expect(String(system?.content)).toContain('only your Workdir is writable (file view "workdir")');
});

it("without the option the same write next door succeeds (the default workspace view)", async () => {
  const project = await world.project();
  const neighbour = await world.project();
  const workspace = await materializeWorkdir(world.dataRoot.path, UID, project.workdirPath);
  await materializeWorkdir(world.dataRoot.path, UID, neighbour.workdirPath);
  const rel = `../${neighbour.workdirPath.split("/").at(-1)}`;
  const models = scriptedModels(() => [
    { toolCalls: [{ name: "bash", arguments: { command: `echo x > ${rel}/new.txt` } }] },
    { text: "done" },
  ]);
  await world.worker({ model: models.factory });
  const thread = await world.thread(project);
  const runId = await world.submit(thread, "write next door");
  expect((await world.waitForRun(runId)).status).toBe("succeeded");
  expect(existsSync(join(workspace, neighbour.workdirPath, "new.txt"))).toBe(true);
  const system = models.clients[0]?.client.requests[0]?.messages[0];
  expect(String(system?.content)).not.toContain("file view");
});
