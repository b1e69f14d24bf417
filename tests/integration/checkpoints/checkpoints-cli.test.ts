import { mkdirSync, writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type ServerType, serve } from "@hono/node-server";
import { eq } from "drizzle-orm";
import { afterAll, beforeAll, expect, test } from "vitest";
import { runCli } from "../../../sdk/cli/run-cli.ts";
import { projects } from "../../../shared/db/schema.ts";
import { type DataRoot, freshDataRoot } from "../../support/data-root.ts";
import { agentRun, plantTree } from "./agent-trees.ts";
import { ALICE, type CheckpointsHarness, startCheckpointsHarness } from "./api-harness.ts";
import { treeManifest } from "./tree-manifest.ts";

let root: DataRoot;
let h: CheckpointsHarness;
let server: ServerType;
let home: string;

beforeAll(async () => {
  root = await freshDataRoot();
  h = await startCheckpointsHarness(root);
  server = serve({ fetch: h.app.fetch, port: 0, hostname: "127.0.0.1" });
  await new Promise<void>((resolve) => server.once("listening", () => resolve()));
  home = await mkdtemp(join(tmpdir(), "workcell-cli-ckpt-"));
});
afterAll(async () => {
  await new Promise<void>((resolve) => server?.close(() => resolve()));
  await h?.close();
  await root?.remove();
  await rm(home, { recursive: true, force: true });
});

async function cli(args: string[]) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runCli(
    args,
    {
      stdout: (t) => out.push(t),
      stderr: (t) => err.push(t),
      env: { WORKCELL_CONFIG: join(home, "config.json") },
    },
    AbortSignal.timeout(60_000),
  );
  return { code, out: out.join(""), err: err.join("") };
}

// `workcell checkpoints | restore | fork` as a user types them, against the API and the
// node's checkpoints over HTTP.
test("checkpoints create and ls, restore, fork; a missing or unknown checkpoint fails", async () => {
  const thread = await h.createThread();
  const [project] = await h.db.select().from(projects).where(eq(projects.id, thread.project_id));
  const dir = h.workdirOnDisk(project?.workdirPath as string);
  mkdirSync(dir, { recursive: true });
  plantTree(dir);
  const before = treeManifest(dir, true);
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  writeFileSync(
    join(home, "config.json"),
    JSON.stringify({
      base_url: url,
      token: await h.token(ALICE),
      last_thread_id: thread.thread_id,
    }),
  );

  const created = await cli(["checkpoints", "create", "before", "--json"]);
  expect(created.code, created.err).toBe(0);
  const taken = JSON.parse(created.out) as { checkpoint_id: string; files: number };
  expect(taken.files).toBe(5);
  const listed = await cli(["checkpoints"]);
  expect(listed.out).toContain(taken.checkpoint_id);
  expect(listed.out).toContain("before");

  agentRun(dir);
  const restored = await cli(["restore", taken.checkpoint_id]);
  expect(restored.code, restored.err).toBe(0);
  expect(restored.out).toMatch(/restored .*undoes this/);
  expect(treeManifest(dir, true)).toEqual(before);

  const forked = await cli(["fork", taken.checkpoint_id, "--json"]);
  expect(forked.code, forked.err).toBe(0);
  const fork = JSON.parse(forked.out) as { thread_id: string; project_id: string };
  const [forkProject] = await h.db.select().from(projects).where(eq(projects.id, fork.project_id));
  expect(treeManifest(h.workdirOnDisk(forkProject?.workdirPath as string))).toEqual(
    treeManifest(dir).filter((line) => line !== ""),
  );

  const missing = await cli(["restore"]);
  expect(missing.code).toBe(2);
  const unknown = await cli(["restore", "9a8b7c6d-5e4f-4a3b-9c2d-1e0f9a8b7c6d"]);
  expect(unknown.code).toBe(1);
  expect(unknown.err).toMatch(/not_found|No such checkpoint/);
});
