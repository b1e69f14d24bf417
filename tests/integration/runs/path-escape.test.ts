import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, expect, it } from "vitest";
import { uidDirname } from "../../../shared/paths/uid-dirname.ts";
import { materializeWorkdir } from "../sandbox/sandbox-fixture.ts";
import { expectGapFree, type RunWorld, runWorld, UID } from "./run-harness.ts";
import { scriptedModels } from "./scripted-models.ts";

let world: RunWorld;

beforeEach(async () => {
  world = await runWorld();
});
afterEach(async () => {
  await world.cleanup();
});

const SECRET = "host secret: must never be read through a run\n";

it("file tool calls that escape are refused, reported to the model, and the run goes on", async () => {
  const project = await world.project();
  const workspace = await materializeWorkdir(world.dataRoot.path, UID, project.workdirPath);
  const workdir = join(workspace, project.workdirPath);
  // The attacker's targets: a host directory beside the workspace, reached by a symlink
  // planted in the Workdir.
  const outside = join(world.dataRoot.path, "outside");
  mkdirSync(outside);
  writeFileSync(join(outside, "secret.txt"), SECRET);
  symlinkSync(outside, join(workdir, "link-out"));

  const escapes = [
    { name: "read_file", arguments: { path: "../../../../outside/secret.txt" } },
    { name: "read_file", arguments: { path: "/etc/passwd" } },
    { name: "read_file", arguments: { path: "link-out/secret.txt" } },
    { name: "write_file", arguments: { path: "link-out/planted.txt", content: "x" } },
    { name: "write_file", arguments: { path: "/home/gem/skills/x", content: "x" } },
    { name: "write_file", arguments: { path: "../../../../outside/planted.txt", content: "x" } },
    { name: "list_dir", arguments: { path: "link-out" } },
  ];
  const models = scriptedModels(() => [
    ...escapes.map((call) => ({ toolCalls: [call] })),
    { text: "still here" },
  ]);
  await world.worker({ model: models.factory });
  const thread = await world.thread(project);
  const runId = await world.submit(thread, "try to escape");

  const run = await world.waitForRun(runId);
  expect(run.status).toBe("succeeded");
  expect(await world.assistantMessages(thread)).toEqual(["still here"]);

  const events = await world.events(runId);
  expectGapFree(events);
  const completed = events.filter((e) => e.type === "tool.completed");
  expect(completed).toHaveLength(escapes.length);
  for (const event of completed) {
    const data = event.data as { is_error: boolean; output: { text: string } };
    expect(data.is_error).toBe(true);
    expect(data.output.text).toMatch(/^Error \((forbidden|not_found|invalid_request)/);
    expect(data.output.text).not.toContain("host secret");
  }
  // The model saw each refusal as its tool result and went on.
  const lastRequest = models.clients[0]?.client.requests.at(-1);
  const toolResults = lastRequest?.messages.filter((m) => m.role === "tool") ?? [];
  expect(toolResults).toHaveLength(escapes.length);

  // Nothing happened outside.
  expect(readdirSync(outside)).toEqual(["secret.txt"]);
  expect(readFileSync(join(outside, "secret.txt"), "utf8")).toBe(SECRET);
  const projection = join(world.dataRoot.path, "skills", "projections", uidDirname(UID));
  expect(existsSync(join(projection, "x"))).toBe(false);
});
