import { type ChildProcess, spawn } from "node:child_process";
import { mkdirSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, expect, it } from "vitest";
import { type DataPlaneEnv, q, SECRET, setupDataPlane } from "./harness.ts";

// The race of tests/integration/workspace/race.test.ts, through HTTP: a separate process
// (the workspace's swapper.ts, standing in for a sandbox) swaps a directory of the Workdir
// for a symlink to outside/ and back as fast as it can, while requests write, read and
// list through it. Every request either works inside the Workdir or is refused; no byte
// lands outside (afterEach), no outside byte or name is ever answered.

const ROUNDS = 1_500;
const REFUSALS = new Set([400, 403, 404, 409]);

let env: DataPlaneEnv;
let swapper: ChildProcess | undefined;
beforeEach(async () => {
  env = await setupDataPlane();
});
afterEach(async () => {
  if (swapper !== undefined) {
    const exited = new Promise((resolve) => swapper?.once("exit", resolve));
    swapper.stdin?.end();
    await exited;
    swapper = undefined;
  }
  await env.finish();
});

it(`${ROUNDS} rounds of PUT / GET / list through a directory swapped for a symlink`, async () => {
  mkdirSync(env.at("dir"));
  writeFileSync(env.at("dir/victim.txt"), "inside");
  const swapperScript = join(import.meta.dirname, "..", "workspace", "swapper.ts");
  swapper = spawn(process.execPath, [swapperScript, env.at("dir"), env.outside], {
    stdio: ["pipe", "pipe", "inherit"],
  });
  await new Promise<void>((resolve) => {
    swapper?.stdout?.on("data", (d: Buffer) => {
      if (d.toString().includes("ready")) resolve();
    });
  });
  const token = await env.token();
  const seen = { ok: 0, refused: 0 };
  const count = (status: number, ok: number) => {
    if (status === ok) seen.ok++;
    else if (REFUSALS.has(status)) seen.refused++;
    else throw new Error(`unexpected status ${status}`);
  };
  for (let i = 0; i < ROUNDS; i++) {
    const put = await env.request("PUT", `/dp/v1/files/content?${q(`/dir/w${i}.txt`)}`, {
      token,
      body: "written through the race",
    });
    await put.arrayBuffer();
    count(put.status, 201);
    // secret.txt exists only outside: reading it through dir/ must never succeed.
    const get = await env.request("GET", `/dp/v1/files/content?${q("/dir/secret.txt")}`, { token });
    const text = await get.text();
    expect(text).not.toContain(SECRET.trim());
    count(get.status, 200);
    const list = await env.request("GET", `/dp/v1/files?${q("/dir")}`, { token });
    const listed = await list.text();
    expect(listed).not.toContain("secret.txt");
    count(list.status, 200);
  }
  // Both sides of the race were really met.
  expect(seen.ok).toBeGreaterThan(0);
  expect(seen.refused).toBeGreaterThan(0);
  // Whatever was written landed in the real dir/ (parked or back in place), never outside.
  const parkedOrBack = readdirSync(env.workdir).filter((name) => name.startsWith("dir"));
  expect(parkedOrBack.length).toBeGreaterThan(0);
});
