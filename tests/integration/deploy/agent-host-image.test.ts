import { execFile, spawn } from "node:child_process";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, expect, inject, test } from "vitest";
import { generateCapabilityKeyPair } from "../../../infra/ops/keys-command.ts";
import { freePort } from "../../setup/free-port.ts";
import { awsConfig, freshBucket, freshQueue } from "../../support/aws.ts";
import { type DataRoot, freshDataRoot } from "../../support/data-root.ts";
import { freshDatabase, type TestDatabase } from "../../support/postgres.ts";

// The agent-host container image (infra/agent-host/image/build-image.sh), built offline
// from Debian's packages, started with the mounts and privileges docs/deploy/nodes.md
// spells out, against the test Postgres, fauxqs and this machine's Docker engine.

const run = promisify(execFile);
const repo = join(import.meta.dirname, "../../..");
const tag = `workcell-test/agent-host:t${process.pid}`;
const name = `wc-agent-host-image-${process.pid}`;
let database: TestDatabase;
let dataRoot: DataRoot;

beforeAll(async () => {
  await run("bash", [join(repo, "infra/agent-host/image/build-image.sh"), tag], {
    maxBuffer: 64 << 20,
    timeout: 1_500_000,
  });
  database = await freshDatabase();
  dataRoot = await freshDataRoot();
}, 1_600_000);
afterAll(async () => {
  await run("docker", ["rm", "-f", name]).catch(() => {});
  await run("docker", ["rmi", "-f", tag]).catch(() => {});
  await database?.drop();
  await dataRoot?.remove();
});

test("the image starts the agent-host with the documented mounts and capabilities", async () => {
  const image = inject("sandboxImage");
  if (!image) throw new Error(inject("dockerError") || "the sandbox image is missing");
  const aws = awsConfig();
  const port = await freePort();
  const env = {
    DATABASE_URL: database.url,
    DATA_ROOT: dataRoot.path,
    NODE_ID: `image-${port}`,
    RUN_QUEUE_URL: await freshQueue(),
    ATTACHMENTS_BUCKET: await freshBucket(),
    AWS_REGION: aws.region,
    AWS_ENDPOINT_URL: aws.endpoint,
    AWS_ACCESS_KEY_ID: "test",
    AWS_SECRET_ACCESS_KEY: "test",
    CAPABILITY_PUBLIC_KEY: (await generateCapabilityKeyPair()).publicJwk,
    DATA_PLANE_PORT: String(port),
    DATA_PLANE_HOST: "127.0.0.1",
    SANDBOX_IMAGE: image,
    WORKER_CONCURRENCY: "1",
  };
  const args = [
    "run",
    "--name",
    name,
    "--label",
    "workcell.test=agent-host-image",
    // Postgres and fauxqs listen on this machine's loopback.
    "--network",
    "host",
    "--pid",
    "host",
    "--cap-drop",
    "ALL",
    ...["CHOWN", "DAC_OVERRIDE", "DAC_READ_SEARCH", "FOWNER", "KILL", "SYS_PTRACE"].flatMap((c) => [
      "--cap-add",
      c,
    ]),
    "--security-opt",
    "no-new-privileges",
    "--read-only",
    "--tmpfs",
    "/tmp",
    "-v",
    "/var/run/docker.sock:/var/run/docker.sock",
    "-v",
    `${dataRoot.path}:${dataRoot.path}`,
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
  const refused = await fetch(`http://127.0.0.1:${port}/dp/v1/files?path=/`);
  expect(refused.status).toBe(401);
  await run("docker", ["stop", "-t", "60", name]);
  expect(await exited).toBe(0);
  expect(output).toContain('"msg":"agent-host stopping"');
}, 300_000);
