import { existsSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, expect, it } from "vitest";
import { domainError } from "../../../shared/errors/domain-errors.ts";
import { uidDirname } from "../../../shared/paths/uid-dirname.ts";
import { containersOfNode } from "../sandbox/sandbox-fixture.ts";
import { expectGapFree, type RunWorld, runWorld, UID } from "./run-harness.ts";

let world: RunWorld;

beforeEach(async () => {
  world = await runWorld();
});
afterEach(async () => {
  await world.cleanup();
});

function workdirOnHost(workdirPath: string): string {
  return join(world.dataRoot.path, "users", uidDirname(UID), "workspace", workdirPath);
}

// The local Workcell's path end to end, minus HTTP: a committed run on the queue, the
// shell model (no LLM) in a real sandbox, the reply and the file where the user finds them.
it("runs a shell command end to end: file in the Workdir, reply, gap-free events", async () => {
  await world.worker();
  const project = await world.project();
  const thread = await world.thread(project);
  const runId = await world.submit(
    thread,
    "echo hello > outputs/hello.txt && cat outputs/hello.txt",
  );

  const run = await world.waitForRun(runId);
  expect(run).toMatchObject({ status: "succeeded", attempt: 1, ownerNode: world.nodeId });
  expect(run.error).toBeNull();

  const workdir = workdirOnHost(project.workdirPath);
  expect(readFileSync(join(workdir, "outputs", "hello.txt"), "utf8")).toBe("hello\n");
  // Created by the run (its first use), owned by the sandbox user.
  expect(statSync(join(workdir, "outputs")).uid).toBe(1000);

  const replies = await world.assistantMessages(thread);
  expect(replies).toHaveLength(1);
  expect(replies[0]).toContain("hello");

  const events = await world.events(runId);
  expectGapFree(events);
  expect(events.map((e) => e.type)).toEqual([
    "run.status",
    "tool.started",
    "tool.output",
    "tool.completed",
    "message.delta",
    "message.completed",
    "run.completed",
  ]);
  // The shell model's run reports its command's exit code (docs/api.md, run.completed).
  expect(events.at(-1)?.data).toEqual({ status: "succeeded", exit_code: 0 });
  expect(events.find((e) => e.type === "tool.completed")?.data).toMatchObject({ exit_code: 0 });

  // The root run ended: its execution tree's sandbox goes.
  await world.waitForNoContainers();
});

it("a command exiting 3: the run succeeded, its events say exit 3 where clients read it", async () => {
  await world.worker();
  const thread = await world.thread(await world.project());
  const runId = await world.submit(thread, "echo partial; exit 3");
  expect((await world.waitForRun(runId)).status).toBe("succeeded");
  const events = await world.events(runId);
  expect(events.find((e) => e.type === "tool.completed")?.data).toMatchObject({
    is_error: true,
    exit_code: 3,
  });
  expect(events.at(-1)).toMatchObject({
    type: "run.completed",
    data: { status: "succeeded", exit_code: 3 },
  });
});

it("a follow-up run in the same thread gets a fresh sandbox", async () => {
  await world.worker();
  const project = await world.project();
  const thread = await world.thread(project);
  const first = await world.submit(thread, "echo one > /tmp/marker; echo first");
  expect((await world.waitForRun(first)).status).toBe("succeeded");
  await world.waitForNoContainers();
  const second = await world.submit(thread, "cat /tmp/marker 2>/dev/null || echo no-marker");
  expect((await world.waitForRun(second)).status).toBe("succeeded");
  // The first tree's sandbox was destroyed when its root run ended: /tmp is new.
  expect(await world.assistantMessages(thread)).toEqual(["first\n", "no-marker\n"]);
});

it("a linked project whose directory is missing fails workdir_missing, and nothing starts", async () => {
  await world.worker();
  const project = await world.project({ linkedPath: "code/not-there" });
  const thread = await world.thread(project);
  const runId = await world.submit(thread, "echo should-not-run");
  const run = await world.waitForRun(runId);
  expect(run.status).toBe("failed");
  expect(run.error?.code).toBe("workdir_missing");
  const events = await world.events(runId);
  expectGapFree(events);
  expect(events.map((e) => e.type)).toEqual(["run.completed"]);
  expect(existsSync(workdirOnHost("code/not-there"))).toBe(false);
  expect(await containersOfNode(world.docker, world.nodeId)).toHaveLength(0);
});

it("without sandbox isolation the run fails no_isolation_available, never unsandboxed", async () => {
  await world.worker({
    extra: {
      sandboxManager: {
        acquire: async () => {
          throw domainError("no_isolation_available");
        },
        exec: () => Promise.reject(new Error("never called")),
        destroy: () => Promise.reject(new Error("never called")),
        keepWarm: () => Promise.reject(new Error("never called")),
        evictWarm: () => Promise.reject(new Error("never called")),
      },
    },
  });
  const thread = await world.thread(await world.project());
  const runId = await world.submit(thread, "echo unsandboxed > /tmp/escaped");
  const run = await world.waitForRun(runId);
  expect(run).toMatchObject({
    status: "failed",
    attempt: 1,
    error: { code: "no_isolation_available" },
  });
});
