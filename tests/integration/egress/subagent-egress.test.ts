import { eq } from "drizzle-orm";
import { Registry } from "prom-client";
import { afterAll, beforeAll, expect, test } from "vitest";
import type { EgressProxy } from "../../../agent-host/egress/egress-proxy.ts";
import { createPostgresEgressAudit } from "../../../agent-host/egress/postgres-egress-audit.ts";
import { networkRequests } from "../../../shared/db/schema.ts";
import { createWorkcellMetrics } from "../../../shared/metrics/workcell-metrics.ts";
import { putNetworkOverride } from "../../../shared/network/network-policy-store.ts";
import { type FakeInternet, startFakeInternet } from "../../support/fake-internet.ts";
import { type RunWorld, runWorld, UID } from "../runs/run-harness.ts";
import { scriptedModels, toolOutputs } from "../runs/scripted-models.ts";
import { silentLogger } from "../sandbox/sandbox-fixture.ts";
import { keepPromptAndAnswer, startEgressWorker } from "./support/egress-worker.ts";
import { RUNTIME_TREE } from "./support/tier-sandboxes.ts";

// Network for sub-agents (issue #34, docs/architecture.md §13): a sub-agent runs in its
// root's sandbox with its root's network: the same listener, so the root's narrowing (not
// its user's wider ceiling) decides, and every connection is audited under the root run
// (its network_requests rows and network.request events), none under the child. The worker
// end to end in the process tier with the real Runtime Assets (curl, the python3 relay)
// against the fake internet.

let world: RunWorld;
let net: FakeInternet;
let proxy: EgressProxy;
const prompts = new Map<string, string>();
const n = (label: string) => net.name(label);

/** curl printing the body, then ` <status>`. */
const curl = (host: string) =>
  `curl -s --max-time 20 -w ' %{http_code}\\n' http://${host}/from-child | tail -c 200`;

beforeAll(async () => {
  net = await startFakeInternet();
  await net.addHosts([
    [n("allowed"), net.address],
    [n("wider"), net.address],
  ]);
  world = await runWorld({ execTimeoutMs: 60_000 }, "process", { runtimeDir: RUNTIME_TREE });
  const models = scriptedModels((request) => {
    if (request.depth === 0)
      return [
        { toolCalls: [{ name: "spawn_subagent", arguments: { task: "fetch" } }] },
        { text: "root done" },
      ];
    return [
      {
        toolCalls: [
          { name: "bash", arguments: { command: `${curl(n("allowed"))}; ${curl(n("wider"))}` } },
        ],
      },
      keepPromptAndAnswer(prompts, request.runId, "child done"),
    ];
  });
  proxy = await startEgressWorker(world, models, {
    audit: createPostgresEgressAudit({
      db: world.db,
      logger: silentLogger,
      metrics: createWorkcellMetrics(new Registry()),
      timeoutMs: 10_000,
    }),
  });
}, 180_000);

afterAll(async () => {
  await world?.cleanup();
  await proxy?.close();
  await net?.close();
});

test("a sub-agent reaches what its narrowed root may, not its user's wider ceiling, and its connections are audited under the root run", async () => {
  await putNetworkOverride(world.db, UID, { mode: "allowlist", allow: [n("allowed"), n("wider")] });
  await net.resetSeen();
  const project = await world.project({ uid: UID });
  const thread = await world.thread(project);
  const rootId = await world.submit(thread, "PARENT", { network: { allow: [n("allowed")] } });
  const root = await world.waitForRun(rootId, undefined, 90_000);
  expect(root.status).toBe("succeeded");
  const [child] = await world.childRuns(rootId);
  if (child === undefined) throw new Error("no sub-agent run");
  expect(child.status).toBe("succeeded");

  // The child's commands had the root's network: its allowed host answered, the host only
  // the user's ceiling (not the root's narrowing) opens was refused.
  const [output = ""] = toolOutputs(await world.events(child.runId));
  expect(output).toContain(`hello from ${n("allowed")} on 80\n 200\n`);
  expect(output).toMatch(/"reason":"not_in_policy".* 403\n/);
  expect(prompts.get(child.runId)).toContain(`Network: commands reach only these hosts`);
  expect(prompts.get(child.runId)).not.toContain(n("wider"));
  expect((await net.seen()).map((s) => [s.host, s.path])).toEqual([[n("allowed"), "/from-child"]]);

  // Audited under the root: its rows and its events, none under the child.
  const rows = (runId: string) =>
    world.db
      .select({ host: networkRequests.host, decision: networkRequests.decision })
      .from(networkRequests)
      .where(eq(networkRequests.runId, runId))
      // A forwarded request is recorded when its connection ends: by host, not by time.
      .orderBy(networkRequests.host);
  expect(await rows(rootId)).toEqual([
    { host: n("allowed"), decision: "allowed" },
    { host: n("wider"), decision: "denied" },
  ]);
  expect(await rows(child.runId)).toEqual([]);
  const hostsOf = async (runId: string) =>
    (await world.events(runId))
      .filter((e) => e.type === "network.request")
      .map((e) => (e.data as { host: string }).host)
      .sort();
  expect(await hostsOf(rootId)).toEqual([n("allowed"), n("wider")]);
  expect(await hostsOf(child.runId)).toEqual([]);
});
