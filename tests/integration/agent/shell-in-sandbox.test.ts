import { readFileSync } from "node:fs";
import { join } from "node:path";
import type Docker from "dockerode";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type AgentEvent,
  createAgentTools,
  createShellModelClient,
  runAgentLoop,
  type SandboxExec,
  type ToolEnvironment,
} from "../../../agent-host/runs/agent/index.ts";
import { LABEL } from "../../../agent-host/sandbox/container-labels.ts";
import type { DockerDriver } from "../../../agent-host/sandbox/docker-driver.ts";
import type { SandboxContainer } from "../../../agent-host/sandbox/driver.ts";
import {
  createLibcSyscalls,
  createPathResolver,
  createUserWorkspaces,
  type WorkspaceFs,
} from "../../../agent-host/workspace/index.ts";
import { domainError } from "../../../shared/errors/index.ts";
import { type DataRoot, freshDataRoot } from "../../support/data-root.ts";
import { removeContainersLabelled } from "../../support/docker.ts";
import { testLogger } from "../../support/test-logger.ts";
import {
  createTestSandbox,
  dockerForTest,
  materializeWorkdir,
} from "../sandbox/sandbox-fixture.ts";

const logger = testLogger();
const UID = "shell-user";
const WORKDIR = "work";

// The local Workcell without an LLM: the shell model runs the user's message as one bash
// call in a real sandbox (Docker, the offline busybox image), through the real loop and
// tools. The SandboxExec here is the thin adapter the run worker puts over the sandbox
// manager, applied to the driver directly (no Postgres needed for this).
describe("shell model in a real sandbox", () => {
  let docker: Docker;
  let dataRoot: DataRoot;
  let nodeId: string;
  let driver: DockerDriver;
  let sandbox: SandboxContainer;
  let workspace: WorkspaceFs;
  let workspaceDir: string;

  beforeAll(async () => {
    dataRoot = await freshDataRoot();
    ({ docker, nodeId, driver } = dockerForTest(dataRoot.path, { killGraceMs: 1_000 }));
    workspaceDir = await materializeWorkdir(dataRoot.path, UID, WORKDIR);
    sandbox = await createTestSandbox(
      driver,
      { uid: UID, workdirPath: WORKDIR, nodeId },
      AbortSignal.timeout(60_000),
    );
    const sys = createLibcSyscalls();
    const users = createUserWorkspaces({
      dataRoot: dataRoot.path,
      sys,
      resolver: createPathResolver(sys),
    });
    workspace = await users.openUserWorkspace(UID);
  });

  afterAll(async () => {
    workspace?.close();
    if (docker) await removeContainersLabelled(docker, LABEL.nodeId, nodeId);
    await dataRoot?.remove();
  });

  function toolEnv(): ToolEnvironment {
    const exec: SandboxExec = {
      async exec(command, options) {
        const out = await driver.exec(
          sandbox,
          {
            cmd: ["/bin/sh", "-c", command],
            cwd: options.cwd,
            timeoutMs: options.timeoutMs,
            maxOutputBytesPerStream: options.maxOutputBytes,
            ...(options.stdin === undefined ? {} : { stdin: options.stdin }),
          },
          options.signal,
        );
        if (!out.ok) throw domainError("stale_generation");
        const { status, exitCode, stdout, stderr } = out.result;
        return {
          status,
          exitCode,
          stdout: stdout.bytes.toString("utf8"),
          stderr: stderr.bytes.toString("utf8"),
          truncated: stdout.droppedBytes > 0 || stderr.droppedBytes > 0,
        };
      },
    };
    return { sandbox: exec, workspace, workdirPath: WORKDIR };
  }

  async function run(input: string, signal = new AbortController().signal, bashTimeoutMs?: number) {
    const events: AgentEvent[] = [];
    const result = await runAgentLoop({
      model: createShellModelClient(),
      tools: createAgentTools({
        subagents: false,
        ...(bashTimeoutMs === undefined ? {} : { bash: { defaultTimeoutMs: bashTimeoutMs } }),
      }),
      toolEnv: toolEnv(),
      systemPrompt: "",
      messages: [{ role: "user", content: input }],
      signal,
      logger,
      emit: (event) => void events.push(event),
    });
    return { result, events };
  }

  it("runs the message in the Workdir and replies with its output", async () => {
    const { result, events } = await run(
      "mkdir -p outputs && echo hello > outputs/hello.txt && cat outputs/hello.txt && pwd && id -u",
    );
    expect(result).toMatchObject({
      status: "succeeded",
      finalText: "hello\n/home/gem/user-data/work\n1000\n",
      turns: 2,
    });
    expect(events.map((e) => e.type)).toEqual([
      "run.status",
      "tool.started",
      "tool.completed",
      "message.delta",
      "message.completed",
      "run.completed",
    ]);
    expect(events[1]).toMatchObject({
      data: { name: "bash", input: { command: expect.stringContaining("echo hello") } },
    });
    // The file is in the UserWorkspace on the host, where the data plane will find it.
    expect(readFileSync(join(workspaceDir, WORKDIR, "outputs", "hello.txt"), "utf8")).toBe(
      "hello\n",
    );
  });

  it("a failing command still answers, with stderr and the exit code", async () => {
    const { result, events } = await run("echo out; echo oops >&2; exit 3");
    expect(result.status).toBe("succeeded");
    expect(result.finalText).toBe("out\n[stderr]\noops\n[exit code 3]");
    expect(events.find((e) => e.type === "tool.completed")).toMatchObject({
      data: { is_error: true, exit_code: 3, output: { exit_code: 3, status: "exited" } },
    });
  });

  it("the skills mount is read-only from inside", async () => {
    const { result } = await run("touch /home/gem/skills/x");
    expect(result.finalText).toMatch(/Read-only file system[\s\S]*\[exit code 1\]/);
  });

  it("cancelling kills the command and ends the run cancelled", async () => {
    const controller = new AbortController();
    // Far longer than the test's timeout: the run can only end in time if the abort
    // kills the command (no wall-clock assertion needed).
    const running = run("sleep 3000", controller.signal);
    setTimeout(() => controller.abort(), 500);
    const { result, events } = await running;
    expect(result.status).toBe("cancelled");
    expect(events.at(-1)).toEqual({ type: "run.completed", data: { status: "cancelled" } });
    // The sandbox's own keep-alive is `sleep 2147483647`; ours must be gone.
    const { result: ps } = await run("ps -o args | grep -c '^sleep 3000' || true");
    expect(ps.finalText.trim()).toBe("0");
  });

  it("a command killed by its timeout fails the run with command_timeout, never succeeded", async () => {
    const { result, events } = await run("echo started; sleep 30", undefined, 1_000);
    expect(result.status).toBe("failed");
    expect(result.error?.code).toBe("command_timeout");
    expect(events.find((e) => e.type === "tool.completed")).toMatchObject({
      data: { is_error: true, exit_code: null, output: { status: "timed_out" } },
    });
    // The output still reached the user, and the terminal event says why it failed.
    expect(result.finalText).toContain("started");
    expect(events.at(-1)).toMatchObject({
      type: "run.completed",
      data: { status: "failed", error: { code: "command_timeout" } },
    });
    const { result: ps } = await run("ps -o args | grep -c '^sleep 30' || true");
    expect(ps.finalText.trim()).toBe("0");
  });
});
