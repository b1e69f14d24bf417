import { readdir } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, expect, test } from "vitest";
import type { EgressProxy } from "../../../agent-host/egress/egress-proxy.ts";
import { putNetworkOverride } from "../../../shared/network/network-policy-store.ts";
import { type RunWorld, runWorld, UID } from "../runs/run-harness.ts";
import { scriptedModels, toolOutputs } from "../runs/scripted-models.ts";
import { keepPromptAndAnswer, startEgressWorker } from "./support/egress-worker.ts";

// A run's network wired end to end in the worker (decision 0117), in the process tier: a
// run of a user whose policy opens hosts gets the variables and its socket for its
// commands (and its prompt says which hosts), the socket is gone when the run ends, and a
// run of a user without network gets neither: today's sandbox. (The relay and the proxy
// against the fake internet: sandbox-tier-egress.test.ts; this world's busybox has no
// python3, so here the relay says it cannot start and the command runs without a route.)

let world: RunWorld;
let proxy: EgressProxy;
/** The system prompt each run's model got, by run id. */
const prompts = new Map<string, string>();

const PROBE =
  "env | grep -c '^HTTP_PROXY=http://127.0.0.1:3128$'; ls -A /tmp | grep -c '^.workcell-egress-'; env | grep -c '^ALL_PROXY=socks5h://'";

beforeAll(async () => {
  world = await runWorld({}, "process");
  const models = scriptedModels((request) => [
    { toolCalls: [{ name: "bash", arguments: { command: PROBE } }] },
    keepPromptAndAnswer(prompts, request.runId, "done"),
  ]);
  proxy = await startEgressWorker(world, models);
}, 120_000);

afterAll(async () => {
  await world?.cleanup();
  await proxy?.close();
});

async function runProbe(uid: string, agent?: Record<string, unknown>) {
  const project = await world.project({ uid });
  const thread = await world.thread(project);
  const runId = await world.submit(thread, "probe", agent);
  const run = await world.waitForRun(runId);
  return {
    run,
    output: toolOutputs(await world.events(runId))[0] ?? "",
    prompt: prompts.get(runId) ?? "",
  };
}

test("a run with network gets the variables and its socket, its prompt names its hosts, and the socket goes with the run", async () => {
  await putNetworkOverride(world.db, UID, {
    mode: "allowlist",
    allow: ["pypi.org", "files.pythonhosted.org"],
  });
  const { run, output, prompt } = await runProbe(UID, { network: { allow: ["pypi.org"] } });
  expect(run.status).toBe("succeeded");
  expect(output).toMatch(/^1\n1\n1\n/);
  expect(prompt).toContain("Network: commands reach only these hosts");
  expect(prompt).toContain("pypi.org");
  expect(prompt).not.toContain("files.pythonhosted.org");
  const stateDir = world.childTier.process?.stateDir ?? "";
  for (const generation of await readdir(stateDir)) {
    const tmp = await readdir(join(stateDir, generation, "tmp")).catch(() => []);
    expect(tmp.filter((name) => name.startsWith(".workcell-egress-"))).toEqual([]);
  }
});

test("a run of a user without network: no variable, no socket, no network line in its prompt", async () => {
  const { run, output, prompt } = await runProbe("nonet");
  expect(run.status).toBe("succeeded");
  expect(output).toMatch(/^0\n0\n0\n/);
  expect(prompt).not.toContain("Network:");
});
