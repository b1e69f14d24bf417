import { type ChildProcess, execFile, spawn } from "node:child_process";
import { access, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, expect, inject, test } from "vitest";
import { generateCapabilityKeyPair } from "../../../infra/ops/keys-command.ts";
import { freePort } from "../../setup/free-port.ts";
import { awsConfig, freshBucket, freshQueue } from "../../support/aws.ts";
import { type DataRoot, freshDataRoot } from "../../support/data-root.ts";
import { freshDatabase, type TestDatabase } from "../../support/postgres.ts";

// A production install's dependency set: the repository's tracked files, `npm ci
// --omit=dev` (what infra/agent-host/install.sh runs), then the agent-host daemon started
// from it against the test Postgres, fauxqs and Docker. No dev dependency (fauxqs, vitest,
// drizzle-kit, …) is on disk, so any runtime import of one fails the start.

const run = promisify(execFile);
const repo = join(import.meta.dirname, "../../..");
let dir: string;
let database: TestDatabase;
let dataRoot: DataRoot;
let child: ChildProcess | undefined;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "wc-prod-install-"));
  const { stdout } = await run("git", ["ls-files", "-z"], { cwd: repo, maxBuffer: 64 << 20 });
  const files = stdout.split("\0").filter((f) => f.length > 0);
  await new Promise<void>((resolve, reject) => {
    const tar = spawn("bash", [
      "-c",
      'cd "$1" && tar -c --null -T - | tar -C "$2" -x',
      "bash",
      repo,
      dir,
    ]);
    tar.on("error", reject);
    tar.on("exit", (code) => (code === 0 ? resolve() : reject(new Error(`tar exited ${code}`))));
    tar.stdin.end(files.join("\0"));
  });
  await run(
    "npm",
    ["ci", "--omit=dev", "--no-audit", "--no-fund", "--prefer-offline", "--loglevel=error"],
    {
      cwd: dir,
      maxBuffer: 64 << 20,
    },
  );
  database = await freshDatabase();
  dataRoot = await freshDataRoot();
}, 600_000);

afterAll(async () => {
  if (child?.exitCode === null) child.kill("SIGKILL");
  await database?.drop();
  await dataRoot?.remove();
  if (dir) await rm(dir, { recursive: true, force: true });
});

const exists = (path: string) =>
  access(path).then(
    () => true,
    () => false,
  );

test("npm ci --omit=dev installs no dev dependency, and the agent-host starts and stops from it", async () => {
  for (const dev of [
    "fauxqs",
    "vitest",
    "drizzle-kit",
    "wrangler",
    "@biomejs/biome",
    "typescript",
  ]) {
    expect(await exists(join(dir, "node_modules", dev)), dev).toBe(false);
  }
  const image = inject("sandboxImage");
  if (!image) throw new Error(inject("dockerError") || "the sandbox image is missing");
  const keys = await generateCapabilityKeyPair();
  const port = await freePort();
  const aws = awsConfig();
  child = spawn(process.execPath, ["agent-host/main.ts"], {
    cwd: dir,
    env: {
      PATH: process.env.PATH ?? "/usr/bin:/bin",
      DATABASE_URL: database.url,
      DATA_ROOT: dataRoot.path,
      NODE_ID: `prod-${port}`,
      RUN_QUEUE_URL: await freshQueue(),
      ATTACHMENTS_BUCKET: await freshBucket(),
      AWS_REGION: aws.region,
      AWS_ENDPOINT_URL: aws.endpoint,
      AWS_ACCESS_KEY_ID: "test",
      AWS_SECRET_ACCESS_KEY: "test",
      CAPABILITY_PUBLIC_KEY: keys.publicJwk,
      DATA_PLANE_PORT: String(port),
      // Not the default 9464: parallel tests (and other engineers) share the host.
      METRICS_PORT: String(await freePort()),
      DATA_PLANE_HOST: "127.0.0.1",
      SANDBOX_IMAGE: image,
      WORKER_CONCURRENCY: "1",
      LOG_LEVEL: "info",
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  const exited = new Promise<number | null>((resolve) =>
    child?.on("exit", (code) => resolve(code)),
  );
  await new Promise<void>((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes('"msg":"workcell agent-host started"')) resolve();
    };
    child?.stdout?.on("data", onData);
    child?.stderr?.on("data", onData);
    void exited.then((code) =>
      reject(new Error(`the agent-host exited (${code}) before starting:\n${output}`)),
    );
  });
  // The data plane answers (a request without a capability is refused, not dropped).
  const refused = await fetch(`http://127.0.0.1:${port}/dp/v1/files?path=/`);
  expect(refused.status).toBe(401);
  child.kill("SIGTERM");
  expect(await exited).toBe(0);
  expect(output).toContain('"msg":"agent-host stopping"');
});
