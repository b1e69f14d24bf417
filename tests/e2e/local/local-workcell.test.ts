import { type ChildProcess, execFile, spawn } from "node:child_process";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import {
  CreateQueueCommand,
  ReceiveMessageCommand,
  SendMessageCommand,
  SQSClient,
} from "@aws-sdk/client-sqs";
import { jwtVerify } from "jose";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { localAwsCredentials } from "../../../infra/local/loopback-fauxqs.ts";
import { freePort } from "../../setup/free-port.ts";
import { type DataRoot, freshDataRoot } from "../../support/data-root.ts";
import { requireDocker } from "../../support/docker.ts";

const repo = join(import.meta.dirname, "../../..");
// Generous: on the shared CI machine (load ~20 on 2 cores) importing the modules alone
// takes ~30 s and a start ~100 s.
const STARTUP_TIMEOUT_MS = 240_000;

type Running = { child: ChildProcess; output: () => string; exited: Promise<number | null> };

/** `npm start` as a newcomer runs it: the real entry in its own process. */
function startWorkcell(env: Record<string, string>): Running {
  const child = spawn(process.execPath, ["infra/local/main.ts"], {
    cwd: repo,
    env: { ...process.env, LOG_LEVEL: "warn", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  child.stdout?.on("data", (d) => {
    output += d;
  });
  child.stderr?.on("data", (d) => {
    output += d;
  });
  const exited = new Promise<number | null>((done) => child.on("exit", (code) => done(code)));
  return { child, output: () => output, exited };
}

async function waitForHealth(url: string, running: Running): Promise<Response> {
  const deadline = Date.now() + STARTUP_TIMEOUT_MS;
  while (Date.now() < deadline) {
    if (running.child.exitCode !== null) {
      throw new Error(`Workcell exited early:\n${running.output()}`);
    }
    try {
      return await fetch(`${url}/v1/healthz`);
    } catch {
      await new Promise((r) => setTimeout(r, 200));
    }
  }
  throw new Error(`Workcell did not answer within ${STARTUP_TIMEOUT_MS} ms:\n${running.output()}`);
}

describe("the local Workcell (one command, one process)", () => {
  let dataRoot: DataRoot;
  let env: Record<string, string>;
  let url: string;

  beforeAll(async () => {
    dataRoot = await freshDataRoot();
    const [port, awsPort] = [await freePort(), await freePort()];
    url = `http://127.0.0.1:${port}`;
    env = {
      DATA_DIR: dataRoot.path,
      PORT: String(port),
      AWS_EMULATOR_PORT: String(awsPort),
      DATA_PLANE_PORT: String(await freePort()),
      // Not the default 9464: parallel tests (and other engineers) share the host.
      METRICS_PORT: String(await freePort()),
    };
  });
  afterAll(() => dataRoot.remove());

  test("starts, reports healthy components, mints tokens, stops on Ctrl-C and keeps its data", async () => {
    const first = startWorkcell(env);
    try {
      const health = await waitForHealth(url, first);
      expect(health.status).toBe(200);
      // The local agent-host's heartbeat reports its tier: ready when one is.
      const tier = /Sandbox +(container|process) tier/.test(first.output());
      expect(await health.json()).toEqual({
        status: tier ? "ok" : "degraded",
        components: { db: "ok", queue: "ok", storage: "ok", nodes: tier ? "ok" : "none_ready" },
      });
      expect(health.headers.get("x-request-id")).toBeTruthy();
      expect(first.output()).toContain(url);
      expect(first.output()).toContain("npm run token -- <uid>");
      expect(first.output()).toMatch(/Sandbox +((container|process) tier \(|none: )/);

      // The token command signs with the secret this Workcell created.
      const { stdout } = await promisify(execFile)(
        process.execPath,
        ["infra/local/mint-token.ts", "alice", "--data-dir", dataRoot.path],
        { cwd: repo },
      );
      const secrets = JSON.parse(await readFile(join(dataRoot.path, "secrets.json"), "utf8"));
      const { payload } = await jwtVerify(
        stdout.trim(),
        new TextEncoder().encode(secrets.devJwtSecret),
        { issuer: "workcell-local", audience: "workcell" },
      );
      expect(payload.sub).toBe("alice");

      // A run end to end (issue 6 §9): thread, command, SSE to the terminal event, and
      // the file it wrote read back through the data plane with a capability.
      requireDocker();
      const token = stdout.trim();
      const auth = { Authorization: `Bearer ${token}`, "content-type": "application/json" };
      const submitted = await fetch(`${url}/v1/runs`, {
        method: "POST",
        headers: auth,
        body: JSON.stringify({ input: "echo hello > outputs/hello.txt && cat outputs/hello.txt" }),
      });
      expect(submitted.status).toBe(202);
      const { run, thread } = (await submitted.json()) as {
        run: { run_id: string };
        thread: { thread_id: string };
      };
      const events = await (
        await fetch(`${url}/v1/runs/${run.run_id}/events`, { headers: auth })
      ).text();
      const types = [...events.matchAll(/^event: (.+)$/gm)].map((m) => m[1]);
      expect(types[0]).toBe("run.status");
      expect(types.at(-1)).toBe("run.completed");
      expect(events).toContain('"status":"succeeded"');
      const access = (await (
        await fetch(`${url}/v1/threads/${thread.thread_id}/files/access`, {
          method: "POST",
          headers: auth,
          body: JSON.stringify({ ops: ["read"] }),
        })
      ).json()) as { base_url: string; token: string };
      const file = await fetch(`${access.base_url}/dp/v1/files/content?path=/outputs/hello.txt`, {
        headers: { Authorization: `Bearer ${access.token}` },
      });
      expect(file.status).toBe(200);
      expect(await file.text()).toBe("hello\n");

      // Something durable in the emulated queue before the restart (its own queue: the
      // run queue has a consumer now).
      const sqs = new SQSClient({
        endpoint: `http://127.0.0.1:${env.AWS_EMULATOR_PORT}`,
        region: "us-east-1",
        // The install's own credentials: the emulator refuses any others (loopback-fauxqs.ts).
        credentials: localAwsCredentials(secrets.devJwtSecret),
      });
      const { QueueUrl: queueUrl } = await sqs.send(
        new CreateQueueCommand({ QueueName: "e2e-kept" }),
      );
      await sqs.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: "kept" }));

      first.child.kill("SIGINT");
      expect(await first.exited).toBe(0);

      const second = startWorkcell(env);
      try {
        expect((await waitForHealth(url, second)).status).toBe(200);
        const again = JSON.parse(await readFile(join(dataRoot.path, "secrets.json"), "utf8"));
        expect(again).toEqual(secrets);
        const received = await sqs.send(
          new ReceiveMessageCommand({ QueueUrl: queueUrl, WaitTimeSeconds: 1 }),
        );
        expect(received.Messages?.map((m) => m.Body)).toEqual(["kept"]);
        // The run survived the restart too.
        const runAfterRestart = await fetch(`${url}/v1/runs/${run.run_id}`, { headers: auth });
        expect(((await runAfterRestart.json()) as { status: string }).status).toBe("succeeded");
      } finally {
        second.child.kill("SIGINT");
        expect(await second.exited).toBe(0);
      }
    } finally {
      if (first.child.exitCode === null) first.child.kill("SIGKILL");
    }
  }, 900_000);
});
