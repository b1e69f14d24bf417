import { randomUUID } from "node:crypto";
import { afterEach, beforeEach, expect, it } from "vitest";
import type { AcquireResult } from "../../../agent-host/sandbox/lifecycle/acquire-sandbox.ts";
import { type Child, spawnChild } from "./child-process.ts";
import { type ManagerWorld, managerWorld } from "./manager-fixture.ts";
import { containersOfNode, materializeWorkdir } from "./sandbox-fixture.ts";

let world: ManagerWorld;
const children: Child[] = [];

beforeEach(async () => {
  world = await managerWorld();
});
afterEach(async () => {
  await Promise.all(children.splice(0).map((c) => c.kill9()));
  await world.cleanup();
});

it("creates one generation for concurrent acquires from two agent-host processes", async () => {
  const workdirPath = `projects/${randomUUID()}`;
  await materializeWorkdir(world.dataRoot.path, "carol", workdirPath);
  const args = {
    mode: "acquire-many" as const,
    dbUrl: world.database.url,
    dataRoot: world.dataRoot.path,
    nodeId: world.nodeId,
    image: world.image,
    uid: "carol",
    runtimeScopeId: randomUUID(),
    workdirPath,
    count: 16,
  };
  const pair = [spawnChild(args), spawnChild(args)];
  children.push(...pair);
  await Promise.all(pair.map((c) => c.next("ready")));
  // Release both at once, so their acquires really race for the same scope.
  for (const c of pair) c.process.stdin?.write("go\n");
  const reports = await Promise.all(pair.map((c) => c.next("acquired")));
  const results = reports.flatMap((r) => r.results as AcquireResult[]);
  expect(results).toHaveLength(32);
  const handles = results.map((r) => (r.ok ? r.handle : undefined));
  expect(handles.every(Boolean)).toBe(true);
  expect(new Set(handles.map((h) => h?.generation)).size).toBe(1);
  expect(new Set(handles.map((h) => h?.instanceId)).size).toBe(1);
  expect(results.filter((r) => r.ok && r.created)).toHaveLength(1);
  expect(await containersOfNode(world.docker, world.nodeId)).toHaveLength(1);
});
