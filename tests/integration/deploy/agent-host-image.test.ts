import { type ChildProcess, execFile, spawn } from "node:child_process";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import Docker from "dockerode";
import { afterAll, beforeAll, expect, test } from "vitest";
import { PROBE_LABEL } from "../../../agent-host/runtime/container-asset-prober.ts";
import { LABEL } from "../../../agent-host/sandbox/instance/container-labels.ts";
import { generateCapabilityKeyPair } from "../../../infra/ops/keys-command.ts";
import type { AdminNodeRuntime } from "../../../shared/contracts/node-runtime.ts";
import type { Run } from "../../../shared/contracts/run.ts";
import type { Thread } from "../../../shared/contracts/thread.ts";
import { DEFAULT_RUNTIME_ASSETS_DIR } from "../../../shared/env/agent-host-env.ts";
import { uidDirname } from "../../../shared/paths/uid-dirname.ts";
import { freePort } from "../../setup/free-port.ts";
import { awsConfig, freshBucket } from "../../support/aws.ts";
import { pollFor } from "../../support/poll-until.ts";
import {
  ALICE,
  type FunctionsHarness,
  jsonOf,
  startFunctionsHarness,
} from "../functions/support/functions-harness.ts";
import { uniqueNodeId } from "../sandbox/sandbox-fixture.ts";

// The agent-host container image (infra/agent-host/image/build-image.sh), built offline
// from Debian's packages, started exactly as docs/deploy/nodes.md says (host network and
// pid namespace, seven capabilities, read-only root, the Docker socket, the data root
// (rshared) and the host's Runtime Assets at the same paths, SANDBOX_IMAGE unset) against the test
// Postgres, fauxqs and this machine's engine: it passes its preflight, verifies the
// Runtime Assets in the container tier, reports them through GET /v1/admin/runtime, and
// runs a real run whose command is the Runtime Assets' bash and python3.

const run = promisify(execFile);
const repo = join(import.meta.dirname, "../../..");
const assetsRoot = "/var/lib/workcell/runtime-assets";
const tag = `workcell-test/agent-host:t${process.pid}`;
const name = `wc-agent-host-image-${process.pid}`;
const docker = new Docker();
const nodeId = uniqueNodeId();
let h: FunctionsHarness;
let dataRootMounted = false;
let manifest: { key: string; version: string };
let agentHost: {
  child: ChildProcess;
  exited: Promise<number | null>;
  port: number;
  output: () => string;
};

beforeAll(async () => {
  manifest = JSON.parse(
    await readFile(join(DEFAULT_RUNTIME_ASSETS_DIR, "../manifest.json"), "utf8").catch(() => {
      throw new Error(
        `no Runtime Assets at ${DEFAULT_RUNTIME_ASSETS_DIR}: run scripts/ensure-system.sh`,
      );
    }),
  );
  // Cached layers: a rebuild redoes the code layer only (build-image.sh).
  await run("bash", [join(repo, "infra/agent-host/image/build-image.sh"), tag], {
    maxBuffer: 64 << 20,
    timeout: 1_500_000,
  });
  h = await startFunctionsHarness({ dbMax: 20 });
  // The data root as a node has it: a mount with shared propagation (systemd makes / shared;
  // this machine's / is private), so the binds agent-host stages inside its container
  // (rshared) reach the host's engine. A bind of the test's own directory onto itself.
  await run("mount", ["--bind", h.dataRoot, h.dataRoot]);
  dataRootMounted = true;
  await run("mount", ["--make-shared", h.dataRoot]);
  agentHost = await startImage();
}, 1_600_000);
afterAll(async () => {
  await run("docker", ["rm", "-f", name]).catch(() => {});
  await run("docker", ["rmi", "-f", tag]).catch(() => {});
  for (const label of [`${LABEL.nodeId}=${nodeId}`, `${PROBE_LABEL}=${nodeId}`]) {
    for (const c of await docker.listContainers({ all: true, filters: { label: [label] } }))
      await docker
        .getContainer(c.Id)
        .remove({ force: true })
        .catch(() => {});
  }
  if (dataRootMounted) await run("umount", ["--lazy", h.dataRoot]);
  await h?.close();
});

/** `docker run` as docs/deploy/nodes.md writes it, with this test's env; resolves once started. */
async function startImage() {
  const aws = awsConfig();
  const port = await freePort();
  const env = {
    DATABASE_URL: h.database.url,
    DATA_ROOT: h.dataRoot,
    NODE_ID: nodeId,
    RUN_QUEUE_URL: h.queueUrl,
    ATTACHMENTS_BUCKET: await freshBucket(),
    AWS_REGION: aws.region,
    AWS_ENDPOINT_URL: aws.endpoint,
    AWS_ACCESS_KEY_ID: "test",
    AWS_SECRET_ACCESS_KEY: "test",
    // Its own key: the run needs none; the data plane must refuse what it did not sign.
    CAPABILITY_PUBLIC_KEY: (await generateCapabilityKeyPair()).publicJwk,
    DATA_PLANE_PORT: String(port),
    DATA_PLANE_HOST: "127.0.0.1",
    WORKER_CONCURRENCY: "1",
    NODE_HEARTBEAT_SECONDS: "1",
    SANDBOX_MEMORY_MB: "512",
  };
  const caps = [
    ...["CHOWN", "DAC_OVERRIDE", "DAC_READ_SEARCH", "FOWNER", "KILL", "SYS_PTRACE"],
    // Staging each sandbox's binds (decision 0055) is a mount.
    "SYS_ADMIN",
  ];
  const args = [
    "run",
    "--name",
    name,
    "--label",
    "workcell.test=agent-host-image",
    // Postgres and fauxqs listen on this machine's loopback.
    ...["--network", "host", "--pid", "host", "--cap-drop", "ALL"],
    ...caps.flatMap((c) => ["--cap-add", c]),
    ...["--security-opt", "no-new-privileges", "--read-only", "--tmpfs", "/tmp"],
    ...["-v", "/var/run/docker.sock:/var/run/docker.sock"],
    ...["-v", `${h.dataRoot}:${h.dataRoot}:rshared`],
    ...["-v", `${assetsRoot}:${assetsRoot}:ro`],
    ...Object.entries(env).flatMap(([k, v]) => ["-e", `${k}=${v}`]),
    tag,
  ];
  const child = spawn("docker", args, { stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
  await new Promise<void>((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes('"msg":"workcell agent-host started"')) resolve();
    };
    child.stdout.on("data", onData);
    child.stderr.on("data", onData);
    void exited.then((code) =>
      reject(new Error(`the container exited (${code}) before starting:\n${output}`)),
    );
  });
  return { child, exited, port, output: () => output };
}

/** Polls a condition the agent-host reaches on its own (no sleep stands in for it). */
async function until<T>(what: string, read: () => Promise<T | undefined>): Promise<T> {
  const value = await pollFor(read, (v) => v !== undefined, {
    what,
    timeoutMs: 240_000,
    intervalMs: 200,
    detail: () => `\n${agentHost.output().slice(-4000)}`,
  });
  return value as T;
}

test("the containerised agent-host verifies the Runtime Assets in the container tier and reports them", async () => {
  const report = await until("the Runtime Assets report", async () => {
    const res = await h.call("GET", "/v1/admin/runtime", { admin: true });
    expect(res.status).toBe(200);
    const items = (await jsonOf<{ items: AdminNodeRuntime[] }>(res)).items;
    const mine = items.find((r) => r.node_id === nodeId);
    return mine?.runtime_assets.state === "verified" ? mine : undefined;
  });
  expect(report.state).toBe("active");
  expect(report.sandbox_tiers).toEqual([
    {
      tier: "container",
      ready: true,
      detail: expect.stringContaining(`image workcell-sandbox:${manifest.key}`),
    },
    // The image has no bubblewrap (and its privileges no user namespaces): no process tier.
    { tier: "process", ready: false, detail: expect.any(String) },
  ]);
  expect(report.runtime_assets.version).toBe(manifest.version);
  expect(report.runtime_assets.assets.filter((a) => !a.ready)).toEqual([]);
  expect(report.runtime_assets.assets.map((a) => a.name)).toEqual(
    expect.arrayContaining(["bash", "python3", "node", "git"]),
  );
  // The probe container is gone once the probes ran.
  expect(
    await docker.listContainers({ all: true, filters: { label: [`${PROBE_LABEL}=${nodeId}`] } }),
  ).toEqual([]);
}, 300_000);

// Arrays and [[ ]] are bash, not POSIX sh: the image's /bin/sh (dash) would refuse them.
const COMMAND = [
  // biome-ignore lint/suspicious/noTemplateCurlyInString: bash expansions, not a JS template
  'a=(x y); [[ ${#a[@]} -eq 2 ]] && echo "bash ${BASH_VERSINFO[0]} $(command -v bash)" > outputs/bash.txt',
  `python3 -c 'import json, sys; print(json.dumps({"python": sys.version_info[0], "sum": 6 * 7}))' > outputs/py.json`,
].join(" && ");

test("a run through the containerised agent-host runs the Runtime Assets' bash and python3 in a sandbox", async () => {
  const res = await h.call("POST", "/v1/runs", {
    body: { input: COMMAND, agent: { sandbox: "container" } },
  });
  expect(res.status, await res.clone().text()).toBe(202);
  const body = await jsonOf<{ run: Run; thread: Thread }>(res);
  const finished = await until("the run to end", async () => {
    const r = await jsonOf<Run>(await h.call("GET", `/v1/runs/${body.run.run_id}`));
    return ["succeeded", "failed", "cancelled"].includes(r.status) ? r : undefined;
  });
  expect(
    finished.status,
    `${JSON.stringify(finished.error)}\n${agentHost.output().slice(-6000)}`,
  ).toBe("succeeded");
  const workdir = join(
    h.dataRoot,
    "users",
    uidDirname(ALICE),
    "workspace",
    body.thread.workdir_path,
  );
  expect(await readFile(join(workdir, "outputs/bash.txt"), "utf8")).toBe(
    "bash 5 /runtime/usr/bin/bash\n",
  );
  expect(JSON.parse(await readFile(join(workdir, "outputs/py.json"), "utf8"))).toEqual({
    python: 3,
    sum: 42,
  });
  // The host's engine ran it in the Runtime Assets' image, labelled with this node.
  const sandboxes = await docker.listContainers({
    all: true,
    filters: { label: [`${LABEL.nodeId}=${nodeId}`] },
  });
  expect(sandboxes.map((c) => c.Image)).toEqual([`workcell-sandbox:${manifest.key}`]);
}, 300_000);

test("the data plane refuses a request without a capability, and docker stop ends the node cleanly", async () => {
  const refused = await fetch(`http://127.0.0.1:${agentHost.port}/dp/v1/files?path=/`);
  expect(refused.status).toBe(401);
  await run("docker", ["stop", "-t", "60", name]);
  expect(await agentHost.exited).toBe(0);
  expect(agentHost.output()).toContain('"msg":"agent-host stopping"');
  // Its sandboxes went with it.
  expect(
    await docker.listContainers({ all: true, filters: { label: [`${LABEL.nodeId}=${nodeId}`] } }),
  ).toEqual([]);
}, 300_000);
