import { afterAll, beforeAll, describe, expect, inject, test } from "vitest";
import { generateCapabilityKeyPair } from "../../../infra/ops/keys-command.ts";
import { runOpsCommand } from "../../../infra/ops/ops-cli.ts";
import { awsConfig, freshBucket, freshQueue } from "../../support/aws.ts";
import { type DataRoot, freshDataRoot } from "../../support/data-root.ts";
import { captureIo } from "../../support/ops-io.ts";
import { freshDatabase, type TestDatabase } from "../../support/postgres.ts";

// `workcell doctor` against the real parts (Postgres, fauxqs, Docker, a data root on this
// machine's filesystem): each part it checks, when taken away, is named as FAIL.

let database: TestDatabase;
let dataRoot: DataRoot;
let healthy: Record<string, string>;

beforeAll(async () => {
  database = await freshDatabase();
  dataRoot = await freshDataRoot();
  const image = inject("sandboxImage");
  if (!image) throw new Error(inject("dockerError") || "the sandbox image is missing");
  const aws = awsConfig();
  healthy = {
    DATABASE_URL: database.url,
    DATA_ROOT: dataRoot.path,
    NODE_ID: "doctor-node",
    RUN_QUEUE_URL: await freshQueue(),
    ATTACHMENTS_BUCKET: await freshBucket(),
    AWS_REGION: aws.region,
    AWS_ENDPOINT_URL: aws.endpoint,
    AWS_ACCESS_KEY_ID: "test",
    AWS_SECRET_ACCESS_KEY: "test",
    CAPABILITY_PUBLIC_KEY: (await generateCapabilityKeyPair()).publicJwk,
    SANDBOX_IMAGE: image,
  };
});
afterAll(async () => {
  await database?.drop();
  await dataRoot?.remove();
});

async function doctor(env: Record<string, string>) {
  // The SDK reads credentials from the process env; the rest comes from the doctor's env.
  Object.assign(process.env, { AWS_ACCESS_KEY_ID: "test", AWS_SECRET_ACCESS_KEY: "test" });
  const io = captureIo(env);
  const code = await runOpsCommand(["doctor"], io);
  const lines = io.out().trim().split("\n");
  const line = (name: string) => lines.find((l) => l.slice(5).startsWith(`${name}:`));
  return { code, lines, line, out: io.out() };
}

describe("workcell doctor", () => {
  test("a healthy node: one verdict per part, no FAIL, exit 0", async () => {
    const r = await doctor(healthy);
    expect(r.code).toBe(0);
    for (const part of [
      "data root",
      "data root openat2",
      "data root no-clobber publish",
      "docker engine",
      "sandbox image",
      "runtime assets",
      "postgres",
      "clock skew",
      "sqs run queue",
      "s3 attachments bucket",
    ]) {
      expect(r.line(part), `${part} in\n${r.out}`).toMatch(/^ok {3}/);
    }
    // A local data root: flock excludes on this node, but the line says it does not span nodes.
    expect(r.line("data root flock")).toMatch(/^(ok |WARN) .*exclusive locks exclude/);
    expect(r.line("data root quota")).toBeDefined();
    expect(r.lines.at(-1)).toBe("doctor: this node can run Workcell");
  });

  test.each([
    ["postgres", { DATABASE_URL: "postgres://workcell:pw-secret@127.0.0.1:1/workcell" }],
    ["data root", { DATA_ROOT: "/nonexistent/workcell-doctor" }],
    ["sandbox image", { SANDBOX_IMAGE: "workcell/not-built:never" }],
    ["runtime assets", { RUNTIME_ASSETS_DIR: "/nonexistent/workcell-doctor/tree" }],
    ["sqs run queue", { RUN_QUEUE_URL: `${awsConfig().endpoint}/000000000000/no-such-queue` }],
    ["s3 attachments bucket", { ATTACHMENTS_BUCKET: "no-such-bucket-for-doctor" }],
  ])("without a working %s it says FAIL for that part by name", async (part, broken) => {
    const r = await doctor({ ...healthy, ...broken });
    expect(r.code).toBe(1);
    expect(r.line(part), r.out).toMatch(/^FAIL /);
    expect(r.lines.at(-1)).toContain(part);
    expect(r.out).not.toContain("pw-secret");
    // The other parts are still checked and still fine.
    const others = ["postgres", "sqs run queue", "s3 attachments bucket"].filter((p) => p !== part);
    for (const other of others) expect(r.line(other), r.out).toMatch(/^ok /);
  });

  test("a bad environment is one FAIL line naming the variables", async () => {
    const { CAPABILITY_PUBLIC_KEY: _k, ...rest } = healthy;
    const r = await doctor({ ...rest, NODE_ID: "bad id!" });
    expect(r.code).toBe(1);
    expect(r.line("environment")).toMatch(
      /^FAIL .*CAPABILITY_PUBLIC_KEY.*NODE_ID|^FAIL .*NODE_ID.*CAPABILITY_PUBLIC_KEY/,
    );
  });
});
