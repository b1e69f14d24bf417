import { randomBytes } from "node:crypto";
import { readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { eq } from "drizzle-orm";
import { afterAll, beforeAll, expect, it } from "vitest";
import type { AgentHost } from "../../../agent-host/agent-host.ts";
import { recordNodeRuntime } from "../../../agent-host/node/record-node-runtime.ts";
import { resolveSandboxImage } from "../../../agent-host/runtime/sandbox-image.ts";
import { detectSandboxTiers } from "../../../agent-host/sandbox/detect-sandbox-tiers.ts";
import { LABEL } from "../../../agent-host/sandbox/instance/container-labels.ts";
import { detectCgroups } from "../../../agent-host/sandbox/process/sandbox-cgroups.ts";
import type { AdminNodeRuntime } from "../../../shared/contracts/node-runtime.ts";
import type { Run } from "../../../shared/contracts/run.ts";
import type { Thread } from "../../../shared/contracts/thread.ts";
import { nodes } from "../../../shared/db/schema/nodes.ts";
import { sandboxes } from "../../../shared/db/schema/sandboxes.ts";
import { DEFAULT_RUNTIME_ASSETS_DIR } from "../../../shared/env/agent-host-env.ts";
import { NO_NETWORK } from "../../../shared/network/network-policy.ts";
import { uidDirname } from "../../../shared/paths/uid-dirname.ts";
import { removeContainersLabelled, requireDocker } from "../../support/docker.ts";
import { pollFor } from "../../support/poll-until.ts";
import {
  ALICE,
  type FunctionsHarness,
  jsonOf,
  startFunctionsHarness,
} from "../functions/support/functions-harness.ts";
import { silentLogger, testConfig, uniqueNodeId } from "../sandbox/sandbox-fixture.ts";
import { startNodeAgentHost } from "./node-agent-host.ts";

// One real agent-host with both tiers, the real Runtime Assets and the default sandbox
// image (issue 20 (5)): its runtime report in its node row, served by GET
// /v1/admin/runtime to admins only (docs/api.md "Nodes and runtimes"); the bash tool running
// real bash in both tiers.

const treeDir = process.env.RUNTIME_ASSETS_DIR ?? DEFAULT_RUNTIME_ASSETS_DIR;
const { docker } = requireDocker();
let h: FunctionsHarness;
let host: AgentHost | undefined;
let nodeId: string;
const stateDir = join(tmpdir(), `workcell-test-runtime-${randomBytes(6).toString("hex")}`);

beforeAll(async () => {
  await readFile(join(treeDir, "../manifest.json")).catch(() => {
    throw new Error(
      `the Runtime Assets are not built at ${treeDir}: run scripts/ensure-system.sh (infra/runtime-assets/build-runtime-assets.sh)`,
    );
  });
  h = await startFunctionsHarness({ dbMax: 20 });
  nodeId = uniqueNodeId();
  // SANDBOX_IMAGE unset, as an operator deploys: the Runtime Assets' own image.
  const config = testConfig(
    await resolveSandboxImage({ configured: undefined, runtimeDir: treeDir }),
    { memoryBytes: 512 * 1024 * 1024 },
  );
  host = await startNodeAgentHost(h, {
    nodeId,
    config,
    egress: {
      networkDefault: NO_NETWORK,
      bytesPerRun: 1_000_000,
      openCidrs: [],
      processStateDir: stateDir,
      containerEgressRoot: join(stateDir, "container-egress"),
    },
    sandboxTiers: await detectSandboxTiers({
      logger: silentLogger,
      dataRoot: h.dataRoot,
      nodeId: nodeId,
      config,
      runtimeDir: treeDir,
      docker,
      process: { stateDir, cgroupParent: `workcell-test/${nodeId}` },
    }),
  });
}, 300_000);
afterAll(async () => {
  await host?.stop();
  await removeContainersLabelled(docker, LABEL.nodeId, nodeId);
  await rm(stateDir, { recursive: true, force: true });
  const cgroups = await detectCgroups(`workcell-test/${nodeId}`);
  if (cgroups.ok) await cgroups.cgroups.removeParent().catch(() => {});
  await h?.close();
});

async function runtimes(): Promise<AdminNodeRuntime[]> {
  const res = await h.call("GET", "/v1/admin/runtime", { admin: true });
  expect(res.status).toBe(200);
  return (await jsonOf<{ items: AdminNodeRuntime[] }>(res)).items;
}

async function reportOf(id: string, ok: (r: AdminNodeRuntime) => boolean) {
  const report = await pollFor(
    async () => (await runtimes()).find((r) => r.node_id === id),
    (r) => r !== undefined && ok(r),
    {
      what: `node ${id}'s runtime report`,
      timeoutMs: 240_000,
      intervalMs: 200,
      detail: (last) => `last report ${JSON.stringify(last)}`,
    },
  );
  return report as AdminNodeRuntime;
}

it("serves each node's tiers and verified Runtime Assets to an admin", async () => {
  const report = await reportOf(nodeId, (r) => r.runtime_assets.state === "verified");
  expect(report.state).toBe("active");
  expect(report.sandbox_tiers).toEqual([
    { tier: "container", ready: true, detail: expect.any(String) },
    { tier: "process", ready: true, detail: expect.any(String) },
  ]);
  const manifest = JSON.parse(await readFile(join(treeDir, "../manifest.json"), "utf8")) as {
    version: string;
    packages: Record<string, string>;
  };
  expect(report.runtime_assets.version).toBe(manifest.version);
  expect(report.runtime_assets.assets.filter((a) => !a.ready)).toEqual([]);
  for (const name of ["bash", "python3", "node", "git"]) {
    expect(report.runtime_assets.assets.find((a) => a.name === name)).toMatchObject({
      ready: true,
      version: expect.stringMatching(/./),
    });
  }
  expect(report.runtime_assets.assets.find((a) => a.name === "bash")?.version).toBe(
    manifest.packages.bash,
  );
  // The data root is a plain temp dir (no prjquota mount): the node reports the weaker mode
  // and names the data root's real mount (decision 0047).
  expect(report.quota_enforcement).toEqual({
    mode: "accounting",
    detail: expect.stringContaining("data root"),
  });
  expect(report.egress_proxy).toEqual({
    state: "ready",
    detail:
      "tiers: process, container; default policy: none; 0 opened CIDRs; secrets: off (no WORKCELL_SECRETS_KEY / CA)",
  });
}, 300_000);

it("refuses a non-admin (403) and an anonymous caller (401) without revealing any node", async () => {
  const res = await h.call("GET", "/v1/admin/runtime");
  expect(res.status).toBe(403);
  const body = await res.text();
  expect(JSON.parse(body)).toMatchObject({ error: { code: "forbidden" } });
  expect(body).not.toContain(nodeId);
  const anonymous = await h.call("GET", "/v1/admin/runtime", { uid: null });
  expect(anonymous.status).toBe(401);
  expect(await anonymous.text()).not.toContain(nodeId);
});

it("reports a node still verifying, one that never reported, and one whose tier stopped answering", async () => {
  const insert = (id: string) =>
    h.db.insert(nodes).values({ nodeId: id, dataPlaneUrl: "http://127.0.0.1:1" });
  const verifying = uniqueNodeId();
  const silent = uniqueNodeId();
  await insert(verifying);
  await insert(silent);
  const signal = AbortSignal.timeout(10_000);
  await recordNodeRuntime(
    h.db,
    verifying,
    {
      tiers: [
        { tier: "container", ready: true, detail: "docker 20.10" },
        { tier: "process", ready: false, detail: "bwrap is not on PATH" },
      ],
      egress: { ready: false, detail: "the egress proxy could not start: not a CIDR: 10.0.0.0/99" },
    },
    signal,
  );
  // The heartbeat no longer finds the container tier answering (Docker went away).
  await h.db.update(nodes).set({ sandboxTiers: [] }).where(eq(nodes.nodeId, verifying));

  const items = await runtimes();
  expect(items.find((r) => r.node_id === verifying)).toMatchObject({
    sandbox_tiers: [
      {
        tier: "container",
        ready: false,
        detail: expect.stringMatching(/not answering at the last heartbeat/),
      },
      { tier: "process", ready: false, detail: "bwrap is not on PATH" },
    ],
    runtime_assets: { state: "verifying", assets: [] },
    egress_proxy: {
      state: "not_ready",
      detail: "the egress proxy could not start: not a CIDR: 10.0.0.0/99",
    },
  });
  expect(items.find((r) => r.node_id === silent)).toMatchObject({
    sandbox_tiers: [],
    quota_enforcement: { mode: "unknown" },
    egress_proxy: { state: "unknown" },
    runtime_assets: { state: "unknown", assets: [] },
  });
});

async function submit(input: string, agent: Record<string, unknown>, threadId?: string) {
  const res = await h.call(
    "POST",
    threadId === undefined ? "/v1/runs" : `/v1/threads/${threadId}/runs`,
    { body: { input, agent } },
  );
  expect(res.status, await res.clone().text()).toBe(202);
  const body = await jsonOf<{ run?: Run; thread?: Thread } & Partial<Run>>(res);
  return { run: (body.run ?? body) as Run, thread: body.thread };
}

function finished(runId: string): Promise<Run> {
  return pollFor(
    async () => jsonOf<Run>(await h.call("GET", `/v1/runs/${runId}`)),
    (run) => ["succeeded", "failed", "cancelled"].includes(run.status),
    {
      what: `run ${runId} to end`,
      timeoutMs: 240_000,
      intervalMs: 200,
      detail: (run) => `still ${run.status}`,
    },
  );
}

const workdirOnHost = (thread: Thread) =>
  join(h.dataRoot, "users", uidDirname(ALICE), "workspace", thread.workdir_path);

// Arrays, [[ ]] with a glob match and ${a[*]:1} are bash, not POSIX sh: busybox sh and
// dash refuse the first line, and then no file is written.
const BASH_ONLY =
  // biome-ignore lint/suspicious/noTemplateCurlyInString: bash expansions, not a JS template
  'a=(alpha beta gamma); [[ ${#a[@]} -eq 3 && ${a[1]} == b* ]] && echo "${BASH_VERSINFO[0]} ${a[*]:1} $(command -v python3)" > outputs/bash.txt';

it.each(["container", "process"] as const)(
  "the bash tool runs real bash from the Runtime Assets in the %s tier",
  async (tier) => {
    const { run, thread } = await submit(BASH_ONLY, { sandbox: tier });
    if (thread === undefined) throw new Error("no thread");
    expect((await finished(run.run_id)).status).toBe("succeeded");
    expect(await readFile(join(workdirOnHost(thread), "outputs/bash.txt"), "utf8")).toBe(
      "5 beta gamma /runtime/usr/bin/python3\n",
    );
  },
  300_000,
);

// docs/decisions/0041: a conversation's next turn may ask for the other tier.
it("a thread's next run in the other tier gets a new sandbox over the same Workdir", async () => {
  const first = await submit("echo from-container > outputs/turn1.txt; echo warm > /tmp/marker", {
    sandbox: "container",
  });
  const thread = first.thread;
  if (thread === undefined) throw new Error("no thread");
  expect((await finished(first.run.run_id)).status).toBe("succeeded");
  const second = await submit(
    'cat outputs/turn1.txt > outputs/turn2.txt; test -e /tmp/marker && echo kept >> outputs/turn2.txt; echo "$(cat /proc/1/comm)" >> outputs/turn2.txt',
    { sandbox: "process" },
    thread.thread_id,
  );
  expect((await finished(second.run.run_id)).status).toBe("succeeded");
  // The Workdir's file carried over; /tmp did not (a new generation, and in the process
  // tier pid 1 of the exec is bubblewrap's, not Docker's init).
  expect(await readFile(join(workdirOnHost(thread), "outputs/turn2.txt"), "utf8")).toMatch(
    /^from-container\n(?!kept)/,
  );
  // And back: a third turn in the container tier.
  const third = await submit(
    "cat outputs/turn2.txt | head -1 > outputs/turn3.txt",
    {
      sandbox: "container",
    },
    thread.thread_id,
  );
  expect((await finished(third.run.run_id)).status).toBe("succeeded");
  expect(await readFile(join(workdirOnHost(thread), "outputs/turn3.txt"), "utf8")).toBe(
    "from-container\n",
  );
}, 300_000);

it("a run asking for the other tier while a run of the tree still uses its sandbox is refused clearly, and starts nothing", async () => {
  const busy = await submit("sleep 600", { sandbox: "container" });
  const thread = busy.thread;
  if (thread === undefined) throw new Error("no thread");
  await pollFor(
    async () =>
      (
        await h.db
          .select({ state: sandboxes.state, instanceId: sandboxes.instanceId })
          .from(sandboxes)
          .where(eq(sandboxes.runtimeScopeId, thread.thread_id))
      )[0],
    (row) => row?.state === "running" && row.instanceId !== null,
    { what: "the busy run's sandbox to start", timeoutMs: 120_000, intervalMs: 200 },
  );
  const before = await readdir(stateDir);
  const other = await submit(
    "echo should-not-run > outputs/other.txt",
    { sandbox: "process" },
    thread.thread_id,
  );
  const failed = await finished(other.run.run_id);
  expect(failed.status).toBe("failed");
  expect(failed.error).toMatchObject({
    code: "sandbox_identity_mismatch",
    message: expect.stringMatching(/still using its sandbox \(container tier/),
  });
  // Nothing ran and no process-tier generation was made for it.
  expect(await readdir(stateDir)).toEqual(before);
  await expect(readFile(join(workdirOnHost(thread), "outputs/other.txt"))).rejects.toThrow();
  expect((await h.call("POST", `/v1/runs/${busy.run.run_id}/cancel`)).status).toBe(202);
  expect((await finished(busy.run.run_id)).status).toBe("cancelled");
}, 300_000);
