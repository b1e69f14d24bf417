import { afterAll, beforeAll, describe, expect, inject, test } from "vitest";
import { mintDevToken } from "../../../infra/local/dev-token.ts";
import type { Run, Thread } from "../../../shared/contracts/index.ts";
import type { AgentHostProcess } from "./support/agent-host-process.ts";
import { type Deployment, startDeployment } from "./support/deployment.ts";
import { runToEnd } from "./support/run-to-end.ts";
import type { ServerProcess } from "./support/server-process.ts";

// Issue 15, item 3 (docs/decisions/0059): the agent-host's log lines of a run carry the
// X-Request-Id of the API request that submitted it. Two processes as deployed
// (functions/entry/node.ts and agent-host/main.ts), a real run in a Docker sandbox, the
// agent-host's own stdout read back.

const SECRET = "run-log-request-id-secret-0123456789";

type LogLine = Record<string, unknown> & { msg?: string };

describe("agent-host log lines of a run", () => {
  let deployment: Deployment;
  let functions: ServerProcess;
  let agentHost: AgentHostProcess;

  beforeAll(async () => {
    const image = inject("sandboxImage");
    if (!image) throw new Error(inject("dockerError") || "the sandbox image is missing");
    deployment = await startDeployment({
      devJwtSecret: SECRET,
      name: "run-log-rid",
      image,
      logLevel: "info",
      agentHostEnv: { LOG_LEVEL: "info" },
    });
    ({ functions, agentHost } = deployment);
  }, 120_000);

  afterAll(async () => {
    await deployment?.stop();
  });

  /** The JSON lines a process printed (its banner and any non-JSON output skipped). */
  function jsonLines(output: string): LogLine[] {
    return output
      .split("\n")
      .filter((line) => line.startsWith("{"))
      .map((line) => JSON.parse(line) as LogLine);
  }

  test("every agent-host log line of a run names the request that submitted it", async () => {
    const token = await mintDevToken(SECRET, "logan");
    const auth = { authorization: `Bearer ${token}`, "content-type": "application/json" };

    // A run in a new thread, the caller naming its own request id.
    const firstId = `e2e-${crypto.randomUUID()}`;
    const first = await fetch(`${functions.url}/v1/runs`, {
      method: "POST",
      headers: { ...auth, "X-Request-Id": firstId },
      body: JSON.stringify({ input: "echo first" }),
    });
    expect(first.status).toBe(202);
    const { run: run1, thread } = (await first.json()) as { run: Run; thread: Thread };
    expect((await runToEnd(functions.url, token, run1.run_id)).status).toBe("succeeded");

    // A second run of the same thread without an id of its own: the API's id (echoed to
    // the caller) is the one its lines carry, not the thread's first request's.
    const second = await fetch(`${functions.url}/v1/threads/${thread.thread_id}/runs`, {
      method: "POST",
      headers: auth,
      body: JSON.stringify({ input: "echo second" }),
    });
    expect(second.status).toBe(202);
    const secondId = second.headers.get("X-Request-Id");
    expect(secondId).toMatch(/^[0-9a-f-]{36}$/);
    const run2 = (await second.json()) as Run;
    expect((await runToEnd(functions.url, token, run2.run_id)).status).toBe("succeeded");

    // Stopping the agent-host flushes its stdout and ends every run's cleanup: the output is
    // complete, so "every line" below is every line the process wrote for these runs.
    await agentHost.stop();
    const lines = jsonLines(agentHost.output());
    for (const [run, requestId] of [
      [run1, firstId],
      [run2, secondId],
    ] as const) {
      const mine = lines.filter((l) => l.run_id === run.run_id);
      // The run's lifecycle, from start to end, is among them.
      expect(mine.map((l) => l.msg)).toEqual(expect.arrayContaining(["run started", "run ended"]));
      for (const line of mine)
        expect({ msg: line.msg, request_id: line.request_id }).toEqual({
          msg: line.msg,
          request_id: requestId,
        });
    }
    // pino writes a rebound key twice: each of these lines names its request exactly once.
    const raw = agentHost.output().split("\n");
    for (const run of [run1, run2]) {
      const mine = raw.filter((l) => l.includes(`"run_id":"${run.run_id}"`));
      expect(mine.length).toBeGreaterThan(0);
      for (const line of mine) expect(line.split('"request_id":').length).toBe(2);
    }
    // The first run created the sandbox: its lifecycle line names the run and the request.
    expect(lines.filter((l) => l.msg === "sandbox created" && l.run_id === run1.run_id)).toEqual([
      expect.objectContaining({ request_id: firstId, uid: "logan" }),
    ]);

    // The API's side of the join: its `run submitted` line names the same id and run.
    const submitted = jsonLines(functions.output()).filter((l) => l.msg === "run submitted");
    expect(submitted).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ run_id: run1.run_id, request_id: firstId }),
        expect.objectContaining({ run_id: run2.run_id, request_id: secondId }),
      ]),
    );
  }, 180_000);
});
